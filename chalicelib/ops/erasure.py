"""Erasure: a person's or a namespace's data found in every plane, tombstoned or removed for good,
and exported whole."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from chalicelib.auth import Caller
from chalicelib.errors import BadRequestError, ForbiddenError
from chalicelib.observability import logger
from chalicelib.ops.common import Ident, Name, OpInput, OpOutput
from chalicelib.registry import OpContext, op
from chalicelib.services.erasure_steps import LEASE_SECONDS, advance, finish
from chalicelib.storable import unstorable
from chalicelib.store import erasure as store
from chalicelib.store import erasure_export
from chalicelib.store import erasure_jobs as jobs
from chalicelib.store.pool import autocommit_connection

# A subject with more rows than this runs as a job of the erasure worker, a batch at a time.
INLINE_MAX_ROWS = 5000
NO_ONE = ("", "-", "*")
NOT_EXPORTED = {
    store.EMBEDDINGS.name: (
        "embedding rows are not exported; each keeps up to 2,048 characters of its turn, so the"
        " excerpt of a turn the retention TTL expired is erased with the subject but is not"
        " in this export"
    ),
    "loom.knowledge_chunks": (
        "a document's chunks are its text again, cut for search: the document is exported whole"
    ),
}
EXPORTED = tuple(t for t in store.ERASED if t.exported)


class SubjectInput(OpInput):
    org: Name
    kind: Literal["user", "namespace_list"]
    user_id: Ident | None = None
    namespace: Name | None = None  # kind user: that namespace only (none: the whole org)
    namespaces: Annotated[list[Name], Field(min_length=1, max_length=100)] | None = None


def subject_of(inp: SubjectInput, caller: Caller) -> store.Subject:
    """The subject a request names, refused when it names no one or reaches past the token."""
    namespaces: tuple[str, ...] | None
    if inp.kind == "user":
        if inp.user_id is None or inp.user_id in NO_ONE:
            raise BadRequestError(
                "kind user needs user_id, the person to erase ('-' and '*' name no one)"
            )
        if inp.namespaces is not None:
            raise BadRequestError(
                "namespaces is for kind namespace_list; a user erasure takes one namespace,"
                " or none for the whole org"
            )
        namespaces = (inp.namespace,) if inp.namespace else None
    else:
        if inp.user_id not in (None, ""):
            raise BadRequestError(
                "kind namespace_list erases every user's rows of the namespaces: drop user_id,"
                " or use kind user"
            )
        names = inp.namespaces or ([inp.namespace] if inp.namespace else [])
        if not names:
            raise BadRequestError("kind namespace_list needs namespaces (or namespace)")
        namespaces = tuple(sorted(set(names)))
    bound = caller.namespace
    if bound is not None and (namespaces is None or set(namespaces) != {bound}):
        raise ForbiddenError(f"this token is bound to namespace {caller.namespace!r}")
    user = inp.user_id if inp.kind == "user" else None
    return store.Subject(org=inp.org, kind=inp.kind, user_id=user, namespaces=namespaces)


def subject_sha256(s: store.Subject, purge: bool) -> str:
    canonical = {"kind": s.kind, "user_id": s.user_id, "namespaces": s.namespaces, "purge": purge}
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()


class JobOut(OpOutput):
    job_id: str
    status: Literal["pending", "running", "done", "failed"]
    kind: str
    user_id: str | None
    namespaces: list[str] | None  # None: every namespace of the org
    purge: bool
    tombstoned: dict[str, int]  # {table: rows tombstoned}
    removed: dict[str, int]  # {table: rows removed from disk}
    last_error: str
    created_at: datetime
    finished_at: datetime | None


def _job_out(job: dict[str, Any]) -> JobOut:
    return JobOut(**{k: job[k] for k in JobOut.model_fields})


# ---- request -------------------------------------------------------------------------------


class RequestInput(SubjectInput):
    purge: bool = False
    defer: bool = False  # run as a job of the erasure worker even when the subject is small


@op("erasure.request", role="org_admin", kind="idempotent", audited=True, mcp="all")
def request(inp: RequestInput, ctx: OpContext) -> JobOut:
    """Tombstone every row of a user or of namespaces in every plane (with purge, remove them
    from disk); a large subject runs as a job whose status erasure.status reads."""
    s = subject_of(inp, ctx.caller)
    sha = subject_sha256(s, inp.purge)
    with autocommit_connection(ctx.deps.pool) as conn:
        large = inp.defer or store.count_rows(conn, s, INLINE_MAX_ROWS) > INLINE_MAX_ROWS
    with ctx.deps.pool.connection() as conn:
        job, created = jobs.open_job(
            conn,
            job_id=f"er_{uuid.uuid4().hex}",
            s=s,
            purge=inp.purge,
            subject_sha256=sha,
            requested_by=ctx.caller.principal or "local",
            status="pending" if large else "running",
            lease_seconds=LEASE_SECONDS,
        )
    if not created or large:
        return _job_out(job)
    try:
        with ctx.deps.pool.connection() as conn:  # one transaction: all of it, or none
            while not advance(conn, job, thread_batch=None, row_batch=None):
                pass
            finish(conn, job)
    except Exception as exc:  # the worker takes it up again; the answer says so
        logger.exception("inline erasure failed", extra={"job_id": job["job_id"]})
        with ctx.deps.pool.connection() as conn:
            jobs.release_job(conn, job["job_id"], error=str(exc))
            job = jobs.get_job(conn, inp.org, job["job_id"]) or job
        return _job_out(job)
    with autocommit_connection(ctx.deps.pool) as conn:
        return _job_out(jobs.get_job(conn, inp.org, job["job_id"]) or job)


# ---- status --------------------------------------------------------------------------------


class StatusInput(OpInput):
    org: Name
    job_id: Annotated[str, StringConstraints(min_length=1, max_length=100)]


class StatusOutput(OpOutput):
    found: bool
    job: JobOut | None


@op("erasure.status", role="org_admin", kind="read", mcp="all")
def status(inp: StatusInput, ctx: OpContext) -> StatusOutput:
    """One erasure job of the org (of its namespace, for a token bound to one): its state and
    what it has tombstoned and removed so far."""
    with autocommit_connection(ctx.deps.pool) as conn:
        job = jobs.get_job(conn, inp.org, inp.job_id, namespace=ctx.caller.namespace)
    return StatusOutput(found=job is not None, job=_job_out(job) if job else None)


# ---- export --------------------------------------------------------------------------------


class ExportInput(SubjectInput):
    include_tombstoned: bool = True
    cursor: Annotated[str, StringConstraints(max_length=4000)] | None = None
    limit: int = Field(default=1000, ge=1, le=5000)


class ExportOutput(OpOutput):
    subject: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]  # {table: rows}, in primary-key order
    not_exported: dict[str, str]  # {table: why}
    next_cursor: str | None  # the next page of the same document, until None


def _encode(table: int, key: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps([table, key]).encode()).decode()


def _decode(cursor: str) -> tuple[int, list[Any]]:
    try:
        table, key = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if (
            not isinstance(table, int)
            or not 0 <= table < len(EXPORTED)
            or not isinstance(key, list)
            or len(key) != len(EXPORTED[table].key)
            or not all(isinstance(v, str | int) and not isinstance(v, bool) for v in key)
            or unstorable(key)  # text the database cannot hold: no key it returned
        ):
            raise ValueError("shape")
    except (ValueError, TypeError, binascii.Error, RecursionError) as exc:
        raise _not_a_cursor() from exc
    return table, key


def _not_a_cursor() -> BadRequestError:
    return BadRequestError("cursor is not one erasure.export returned")


@op("erasure.export", role="org_admin", kind="read", audited=True, mcp="all")
def export(inp: ExportInput, ctx: OpContext) -> ExportOutput:
    """Everything held about a user or namespaces, one JSON document paged by `limit` rows,
    tombstoned rows included unless include_tombstoned is false; embedding rows are not."""
    s = subject_of(inp, ctx.caller)
    index, after = _decode(inp.cursor) if inp.cursor else (0, None)
    tables: dict[str, list[dict[str, Any]]] = {}
    left, next_cursor = inp.limit, None
    with autocommit_connection(ctx.deps.pool) as conn:
        if after is not None and not erasure_export.key_fits(conn, EXPORTED[index], after):
            raise _not_a_cursor()
        while index < len(EXPORTED):
            table = EXPORTED[index]
            rows = erasure_export.export_page(
                conn,
                table,
                s,
                include_tombstoned=inp.include_tombstoned,
                after=after,
                limit=left,
            )
            tables.setdefault(table.name, []).extend(rows)
            left -= len(rows)
            if left == 0:
                next_cursor = _encode(index, [rows[-1][k] for k in table.key])
                break
            index, after = index + 1, None
    return ExportOutput(
        subject={"org": s.org, "kind": s.kind, "user_id": s.user_id, "namespaces": s.namespaces},
        tables=tables,
        not_exported=NOT_EXPORTED,
        next_cursor=next_cursor,
    )

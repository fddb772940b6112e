"""The knowledge plane: documents a namespace publishes for its agents, searched by chunk."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from chalicelib.auth import ReadScope
from chalicelib.cursors import decode_cursor, encode_cursor
from chalicelib.errors import ConflictError
from chalicelib.ops.common import TURN_KEY_BYTES_MAX, Name, OpOutput, OrgScoped
from chalicelib.providers.embedder import EMBED_CHARS, EmbedderError
from chalicelib.registry import OpContext, op
from chalicelib.sensitivity import is_sensitive, is_sensitive_embedded
from chalicelib.services.chunking import chunk_text
from chalicelib.services.knowledge_reads import SearchMode, listed_documents, search_chunks
from chalicelib.store import knowledge as store
from chalicelib.store.audit import write_audit
from chalicelib.store.namespaces import ensure_namespace, org_namespaces
from chalicelib.store.pool import autocommit_connection

READ_SCOPES: tuple[ReadScope, ...] = ("namespace", "own_user")
ALL_MINE = "all_mine"
# A scheme (RFC 3986: a letter, then letters, digits, + - .), a colon, then no space.
Uri = Annotated[
    str,
    StringConstraints(min_length=1, max_length=500, pattern=r"^[A-Za-z][A-Za-z0-9+.\-]*:\S+$"),
]
Tag = Annotated[str, StringConstraints(min_length=1, max_length=100)]
Tags = Annotated[list[Tag], Field(max_length=50)]


class DocumentScoped(OrgScoped):
    uri: Uri

    @model_validator(mode="after")
    def _key_fits(self) -> DocumentScoped:
        # A document is keyed by (org, namespace, uri): the three must fit one index entry.
        size = sum(
            len(v.encode("utf-8", "surrogatepass")) for v in (self.org, self.namespace, self.uri)
        )
        if size > TURN_KEY_BYTES_MAX:
            raise ValueError(
                f"org, namespace and uri take {size} bytes of UTF-8; together they may take at"
                f" most {TURN_KEY_BYTES_MAX}"
            )
        return self


def _unique(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))


class PublishInput(DocumentScoped):
    title: Annotated[str, StringConstraints(max_length=1_000)] = ""
    text: Annotated[str, StringConstraints(min_length=1, max_length=1_000_000)]
    tags: Annotated[Tags, AfterValidator(_unique)] = Field(default_factory=list)
    if_version: int | None = Field(
        default=None,
        ge=0,
        description="Publish only if the stored version is this one (0: none is).",
    )


class PublishOutput(OpOutput):
    uri: str
    version: int
    changed: bool
    chunks: int
    chunks_withheld: int


@op("knowledge.publish", role="writer", kind="idempotent", mcp="all")
def publish(inp: PublishInput, ctx: OpContext) -> PublishOutput:
    """Create or replace the document at `uri` (a scheme, at most 500 characters; text at most
    1,000,000 characters; at most 50 tags). The same text, title and tags as stored change
    nothing (`changed: false`). `if_version` compares and sets: 409 unless the stored version
    is that one (0: no document yet). A chunk that reads as high is stored but never embedded,
    indexed or returned, counted in `chunks_withheld`."""
    key = (inp.org, inp.namespace, inp.uri)
    with autocommit_connection(ctx.deps.pool) as conn:
        stored = store.get_document(conn, *key)
    _check_version(inp, stored)
    if stored is not None and _same(stored, inp):
        return _unchanged(ctx, inp, stored)
    chunks = _embedded_chunks(ctx, inp.text)
    with ctx.deps.pool.connection() as conn:
        # Read again under the lock: a publish that landed since is the version compared.
        stored = store.lock_document(conn, *key)
        _check_version(inp, stored)
        if stored is not None and _same(stored, inp):
            return _counted(inp.uri, stored["version"], False, chunks)
        version = 1 if stored is None else stored["version"] + 1
        ensure_namespace(conn, inp.org, inp.namespace)  # all_mine searches find it
        store.write_document(
            conn, *key, title=inp.title, text=inp.text, tags=inp.tags,
            author=ctx.caller.principal or "local", version=version,
            model=ctx.deps.embedder.name, chunks=chunks,
        )  # fmt: skip
    return _counted(inp.uri, version, True, chunks)


def _check_version(inp: PublishInput, stored: dict[str, Any] | None) -> None:
    held = 0 if stored is None else stored["version"]
    if inp.if_version is not None and inp.if_version != held:
        raise ConflictError(
            f"document {inp.uri!r} is at version {held}, not {inp.if_version}; read it again"
        )


def _same(stored: dict[str, Any], inp: PublishInput) -> bool:
    return (stored["text"], stored["title"], stored["tags"]) == (inp.text, inp.title, inp.tags)


def _embedded_chunks(ctx: OpContext, text: str) -> list[store.ChunkRow]:
    """The text's chunks, those that do not read as high embedded in one batched call (none
    when the embedder is down: a publish of the same text later embeds them)."""
    cut = chunk_text(text)
    withheld = [is_sensitive_embedded(c.text, EMBED_CHARS) for c in cut]
    sent = [c.text[:EMBED_CHARS] for c, w in zip(cut, withheld, strict=True) if not w]
    vectors: list[Any] = []
    if sent:
        try:
            vectors = ctx.deps.embedder.embed_documents(sent)
        except EmbedderError:
            vectors = [None] * len(sent)
    it = iter(vectors)
    return [
        store.ChunkRow(c.ordinal, c.text, w, None if w else next(it))
        for c, w in zip(cut, withheld, strict=True)
    ]


def _unchanged(ctx: OpContext, inp: PublishInput, stored: dict[str, Any]) -> PublishOutput:
    """Nothing to write; chunks left without a vector of today's model (an embedder that was
    down, or another model) are embedded now, the version unchanged."""
    key, model = (inp.org, inp.namespace, inp.uri), ctx.deps.embedder.name
    with autocommit_connection(ctx.deps.pool) as conn:
        missing = store.chunks_to_embed(conn, *key, model)
    if missing:
        try:
            vectors = ctx.deps.embedder.embed_documents([t[:EMBED_CHARS] for _, t in missing])
        except EmbedderError:
            vectors = []
        if vectors:
            pairs = [(o, v) for (o, _), v in zip(missing, vectors, strict=True)]
            with ctx.deps.pool.connection() as conn:
                store.set_chunk_vectors(conn, *key, model, pairs)
    chunks = chunk_text(inp.text)
    withheld = sum(is_sensitive_embedded(c.text, EMBED_CHARS) for c in chunks)
    return PublishOutput(
        uri=inp.uri, version=stored["version"], changed=False, chunks=len(chunks),
        chunks_withheld=withheld,
    )  # fmt: skip


def _counted(uri: str, version: int, changed: bool, chunks: list[store.ChunkRow]) -> PublishOutput:
    withheld = sum(c.withheld for c in chunks)
    return PublishOutput(
        uri=uri, version=version, changed=changed, chunks=len(chunks), chunks_withheld=withheld
    )


class GetInput(DocumentScoped):
    pass


class DocumentOut(OpOutput):
    uri: str
    title: str
    text: str
    tags: list[str]
    author: str
    version: int
    created_at: datetime
    updated_at: datetime


class GetOutput(OpOutput):
    found: bool
    document: DocumentOut | None


@op("knowledge.get", role="viewer", kind="read", mcp="all", scopes=READ_SCOPES)
def get(inp: GetInput, ctx: OpContext) -> GetOutput:
    """One document by `uri`, its whole text as published, or `found: false`. A document whose
    text reads as high is served here only, with an audit row (as memory.get serves a fact)."""
    with ctx.deps.pool.connection() as conn:
        row = store.get_document(conn, inp.org, inp.namespace, inp.uri)
        if row is not None and any(is_sensitive(t) for t in (row["text"], row["title"])):
            write_audit(
                conn,
                org=inp.org,
                namespace=inp.namespace,
                op="knowledge.sensitive_read",
                principal=ctx.caller.principal or "local",
                body_sha256=hashlib.sha256(
                    row["text"].encode("utf-8", "surrogatepass")
                ).hexdigest(),
            )
    if row is None:
        return GetOutput(found=False, document=None)
    return GetOutput(
        found=True, document=DocumentOut(**{k: row[k] for k in DocumentOut.model_fields})
    )


class ListInput(OrgScoped):
    tags: Tags = Field(default_factory=list)
    uri_prefix: Annotated[str, StringConstraints(max_length=500)] = ""
    limit: int = Field(default=50, ge=1, le=200)
    cursor: Annotated[str, StringConstraints(max_length=2_000)] | None = None


class DocumentRow(OpOutput):
    uri: str
    title: str
    tags: list[str]
    version: int
    updated_at: datetime
    chars: int


class ListOutput(OpOutput):
    documents: list[DocumentRow]
    next_cursor: str | None


@op("knowledge.list", role="viewer", kind="read", mcp="all", scopes=READ_SCOPES)
def list_documents(inp: ListInput, ctx: OpContext) -> ListOutput:
    """The namespace's documents, newest first, without their text; `tags` keeps those carrying
    every tag named, `uri_prefix` those whose uri starts with it. At most 200 a page."""
    before = None
    if inp.cursor:
        ts, (uri,) = decode_cursor(inp.cursor, 1)
        before = (ts, uri)
    with autocommit_connection(ctx.deps.pool) as conn:
        rows = store.list_documents(
            conn, inp.org, inp.namespace, tags=inp.tags, uri_prefix=inp.uri_prefix,
            before=before, limit=inp.limit + 1,
        )  # fmt: skip
    more, rows = len(rows) > inp.limit, rows[: inp.limit]
    docs = [DocumentRow(**r) for r in listed_documents(rows)]
    last = rows[-1] if rows else None
    cursor = encode_cursor(last["updated_at"], last["uri"]) if more and last else None
    return ListOutput(documents=docs, next_cursor=cursor)


class SearchInput(OrgScoped):
    namespace: Name = Field(
        description='The namespace searched, or "all_mine": every namespace of the org the'
        " caller reads, up to the fan-out cap."
    )
    query: Annotated[str, StringConstraints(min_length=1, max_length=10_000)]
    top_k: int = Field(default=10, ge=1, le=100)
    search_mode: SearchMode = "hybrid"
    tags: Tags = Field(default_factory=list)
    uri_prefix: Annotated[str, StringConstraints(max_length=500)] = ""


class KnowledgeHit(OpOutput):
    namespace: str
    uri: str
    title: str
    chunk: int
    excerpt: str
    score: float
    tags: list[str]


class SearchOutput(OpOutput):
    hits: list[KnowledgeHit]
    namespaces_skipped: list[str] = Field(default_factory=list)


@op("knowledge.search", role="viewer", kind="read", mcp="all", scopes=READ_SCOPES)
def search(inp: SearchInput, ctx: OpContext) -> SearchOutput:
    """Chunks of the namespace's documents by meaning and by words (BM25), fused by reciprocal
    rank (`search_mode` hybrid), or by one of them (semantic, lexical); `tags` (all of them)
    and `uri_prefix` narrow the documents. `namespace: "all_mine"` reads every namespace of
    the org up to the fan-out cap, as memory.search does. Not filtered by agent: a bot finds
    its own rules with tags=["agent:<agent>"]. A chunk that reads as high is never a hit."""
    namespaces, skipped = _fan_out(ctx, inp.org, inp.namespace)
    f = store.DocFilter(
        org=inp.org, namespaces=tuple(namespaces), tags=tuple(inp.tags), uri_prefix=inp.uri_prefix
    )
    hits = search_chunks(ctx.deps, f, inp.query, inp.top_k, inp.search_mode)
    return SearchOutput(hits=[KnowledgeHit(**h) for h in hits], namespaces_skipped=skipped)


def _fan_out(ctx: OpContext, org: str, namespace: str) -> tuple[list[str], list[str]]:
    """The namespaces a search reads, and those all_mine skipped at the cap (most recently
    changed first, as conversation.search fans out)."""
    if namespace != ALL_MINE:
        return [namespace], []
    cap = ctx.live().memory_search_fanout_max_namespaces
    with autocommit_connection(ctx.deps.pool) as conn:
        mine = org_namespaces(conn, org)
    return mine[:cap], mine[cap:]


class DeleteInput(DocumentScoped):
    pass


class DeleteOutput(OpOutput):
    uri: str
    found: bool


@op("knowledge.delete", role="writer", kind="idempotent", audited=True, mcp="all")
def delete(inp: DeleteInput, ctx: OpContext) -> DeleteOutput:
    """Remove the document at `uri` and its chunks; `found` says whether one existed."""
    with ctx.deps.pool.connection() as conn:
        found = store.delete_document(conn, inp.org, inp.namespace, inp.uri)
    return DeleteOutput(uri=inp.uri, found=found)

"""The `loom` command: serve, migrate, token mint / list / revoke, settings set,
ingest-transcript, recall, drops, reextract, demote-activity-narration."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from pydantic import ValidationError
from pydantic_settings import SettingsError

from chalicelib.config import (
    BOOT_ONLY,
    Settings,
    auth_off_refusal,
    setting_name,
    with_overrides,
)
from chalicelib.deps import Deps, current_deps, set_deps
from chalicelib.errors import LoomError, ValidationFailedError
from chalicelib.observability import logging_to_stderr

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace, deps: Deps) -> int:
    """Embedded database + migrations + `chalice local` + the scheduled workers beside it."""
    from chalicelib.services.admin import migrate_database
    from chalicelib.services.tiering import tiering_refusal
    from chalicelib.web import load_ops
    from chalicelib.workers.schedule import run_forever

    load_ops()  # the workers beside the server run the ops their jobs name
    settings = deps.settings
    port = args.port or settings.port
    host = args.host or settings.host
    refusal = auth_off_refusal(settings.auth, host, settings.lambda_function_name)
    if refusal is not None:  # LOOM_HOST was checked with the settings; --host is checked here
        raise LoomError(refusal)
    _check_port_free(host, port)
    if not settings.database_url:
        _say(f"Starting the embedded PostgreSQL in {Path(settings.data_dir).resolve()} ...")
    url = deps.database_url()
    applied = migrate_database(deps)
    _say(f"Database ready ({len(applied)} migration(s) applied).")
    refusal = tiering_refusal(deps)  # a tablespace the database cannot give (Aurora has none)
    if refusal is not None:
        raise LoomError(refusal)
    env = dict(os.environ, LOOM_DATABASE_URL=url, LOOM_HOST=host)  # the API checks it again
    chalice = Path(sys.executable).parent / "chalice"
    cmd = [str(chalice), "local", "--host", host, "--port", str(port), "--stage", "local"]
    cmd.append("--no-autoreload")  # a served API does not restart when a file is saved
    child = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env)
    stop = threading.Event()
    # A SIGTERM (a supervisor, a test) stops the server as Ctrl-C does: never leave the
    # API process behind.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if not _listening(child, _reachable(host), port):
            raise LoomError(f"the API server on port {port} stopped before it served; see above")
        _say(
            f"Loom is serving on http://{_reachable(host)}:{port} (auth {settings.auth},"
            f" org {settings.org}); Ctrl-C stops it and keeps the data."
        )
        threading.Thread(target=run_forever, args=(deps, stop), daemon=True).start()
        return child.wait()
    except KeyboardInterrupt:
        _say("Stopping ...")
        return 0
    finally:
        stop.set()
        if child.poll() is None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
        deps.close()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _reachable(host: str) -> str:
    """Where this machine reaches a server listening on `host` (every address: loopback)."""
    return "127.0.0.1" if host in ("0.0.0.0", "") else host


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port another process holds before anything starts: chalice local would say so
    only in a traceback."""
    with socket.socket() as probe:  # IPv4, as chalice local listens
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as chalice local binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise LoomError(
                    f"port {port} is in use; stop the other server or set LOOM_PORT / --port"
                ) from exc
            raise LoomError(
                f"cannot listen on {host} port {port} ({exc.strerror}); set LOOM_HOST / --host"
                " or LOOM_PORT / --port"
            ) from exc


def _listening(child: subprocess.Popen[bytes], host: str, port: int) -> bool:
    """Wait until the API process accepts connections; False when it exits first."""
    while child.poll() is None:
        try:
            socket.create_connection((host, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def cmd_migrate(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.services.admin import migrate_database

    applied = migrate_database(deps)
    print(f"applied: {', '.join(applied)}" if applied else "up to date")
    return 0


def cmd_token_mint(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.auth import issue_token

    minted = issue_token(
        deps,
        org=args.org,
        role=args.role,
        namespace=args.namespace,
        read_scope=args.read_scope,
        read_user_id=args.read_user_id,
        subject=args.subject,
        expires_in=args.expires_in,
        agent=args.agent,
    )
    ends = f"expires {_when(minted.expires_at)}" if minted.expires_at else "never expires"
    _say(
        f"Minted {args.role} token {minted.id} for org {args.org} ({ends}). It is shown once;"
        " store it now."
    )
    print(minted.token)
    return 0


def cmd_token_list(args: argparse.Namespace, deps: Deps) -> int:
    """Every token's grants and dates; never a token or its hash."""
    from chalicelib.auth import token_rows

    rows = token_rows(deps, args.org)
    if not rows:
        print(f"no tokens in org {args.org}" if args.org else "no tokens")
        return 0
    now = deps.clock()
    table = [TOKEN_COLUMNS]
    for r in rows:
        if r["revoked_at"] is not None:
            state = "revoked"
        elif r["expires_at"] is not None and r["expires_at"] <= now:
            state = "expired"
        else:
            state = "live"
        table.append(
            (
                str(r["id"]),
                state,
                r["org"],
                r["role"],
                r["namespace"] or "*",
                r["read_scope"],
                r["read_user_id"] or "-",
                r["agent"] or "-",
                r["subject"],
                _when(r["created_at"]),
                _when(r["expires_at"]),
                _when(r["revoked_at"]),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(TOKEN_COLUMNS))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


TOKEN_COLUMNS = (
    "id",
    "state",
    "org",
    "role",
    "namespace",
    "read_scope",
    "user",
    "agent",
    "subject",
    "created",
    "expires",
    "revoked",
)


def _when(moment: datetime | None) -> str:
    """A time as one word in UTC (a table's columns split on spaces), or "-"."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ") if moment else "-"


def cmd_token_revoke(args: argparse.Namespace, deps: Deps) -> int:
    """Revoke a token, named by its id (`loom token list`) or by the token itself: every server
    refuses it from its next request, since each request reads the token's row."""
    from chalicelib.auth import TOKEN_PREFIX, hash_token, revoke

    ref = args.token.strip()
    token_id: int | None = None
    token_hash: str | None = None
    if ref.isascii() and ref.isdigit():
        if int(ref) >= 2**63:  # past any id: bigint would refuse the comparison
            raise LoomError(f"no token has id {ref}; `loom token list` shows the ids")
        token_id, shown = int(ref), f"id {ref}"
    elif ref.startswith(TOKEN_PREFIX):
        token_hash, shown = hash_token(ref), "that value"
    else:
        raise LoomError(
            f"give the token itself ({TOKEN_PREFIX}...) or its id from `loom token list`"
        )
    row = revoke(deps, token_id=token_id, token_hash=token_hash)
    if row is None:
        raise LoomError(f"no token has {shown}; `loom token list` shows the ids")
    grants = f"{row['role']} of org {row['org']}"
    if row["revoked_now"]:
        print(f"revoked token {row['id']} ({grants}); every server refuses it from now on")
    else:
        print(f"token {row['id']} ({grants}) was already revoked at {_when(row['revoked_at'])}")
    return 0


_LIFETIME = re.compile(r"([0-9]{1,9})\s*([smhdw])")
_LIFETIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
LONGEST_LIFETIME = timedelta(days=3650)


def _lifetime(text: str) -> timedelta:
    """An argparse type: how long a token lives, a whole number and a unit (30d)."""
    match = _LIFETIME.fullmatch(text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime: write a whole number and a unit, s, m, h, d or w"
            " (90s, 30m, 12h, 30d, 2w)"
        )
    lifetime = timedelta(seconds=int(match[1]) * _LIFETIME_UNITS[match[2]])
    if not timedelta(0) < lifetime <= LONGEST_LIFETIME:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 and at most 3650d (ten years), not {text}"
        )
    return lifetime


def cmd_settings_set(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.services.admin import set_live_setting

    name = setting_name(args.name)
    if name not in Settings.model_fields:
        raise LoomError(f"unknown setting {args.name!r}; see README.md for the list")
    if name in BOOT_ONLY:
        raise LoomError(f"{args.name} is read at start only: set LOOM_{name.upper()} and restart")
    try:
        with_overrides(deps.settings, {name: args.value})
    except ValidationError as exc:
        raise LoomError(f"invalid value for {name}: {exc.errors()[0]['msg']}") from exc
    set_live_setting(deps, name, args.value)
    print(f"{name} = {args.value} (live; servers pick it up within their refresh interval)")
    return 0


def _progress_bar(done: int, total: int, unit: str = "turns", always: bool = False) -> None:
    """A one-line progress bar on stderr for long runs."""
    if total <= BATCH_FOR_PROGRESS and not always:
        return
    width = 30
    filled = int(width * done / total)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total} {unit}{end}")
    sys.stderr.flush()


BATCH_FOR_PROGRESS = 64


def cmd_ingest_transcript(args: argparse.Namespace, deps: Deps) -> int:
    """Append every turn of a transcript file; run twice, it adds nothing the second time."""
    from chalicelib.transcript_file import (
        TranscriptError,
        clean_turns,
        parse_transcript,
        transcript_thread_id,
    )

    try:
        text = Path(args.file).read_text(encoding="utf-8-sig")  # a byte order mark is no text
        turns = parse_transcript(text)
    except (OSError, UnicodeDecodeError, TranscriptError) as exc:
        raise LoomError(f"cannot read {args.file}: {exc}") from exc
    if args.clean_text:
        turns = clean_turns(turns)
    if not turns:
        raise LoomError(f"{args.file} holds no turns with text; nothing was appended")
    thread_id = args.thread_id or transcript_thread_id(text)
    from chalicelib.ops.transcript_ingest import check_turns, ingest_turns, recording_enabled

    org = args.org or deps.settings.org
    try:  # the whole file first, so a refused turn leaves nothing half written
        check_turns(org, args.namespace, args.agent, thread_id, turns, args.user_id, args.run_id)
    except ValidationFailedError as exc:
        said = "A real run would append nothing." if args.dry_run else "Nothing was appended."
        raise LoomError(f"{args.file}: {exc.message}. {said}") from exc
    if args.dry_run:
        roles = ", ".join(f"{n} {r}" for r, n in sorted(Counter(r for r, _ in turns).items()))
        print(f"{len(turns)} turns ({roles}) would go to thread {thread_id}")
        return 0
    sent = _SentCount(args.sent_file, thread_id, turns)
    if (args.brief or args.extract) and not args.url:
        raise LoomError("--brief and --extract go through a running server: give --url")
    if args.url:
        if args.brief or args.extract:
            _brief_and_extraction(args, thread_id, turns)
        counts = _ingest_over_http(args, thread_id, turns, sent)
        summary = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        print(f"thread {thread_id}: {summary or 'nothing new'}")
        return 0
    if not recording_enabled(deps, org, args.namespace):
        raise LoomError(_NOT_RECORDING.format(args.namespace))
    counts = ingest_turns(
        deps,
        org=org,
        namespace=args.namespace,
        agent=args.agent,
        thread_id=thread_id,
        turns=turns,
        user_id=args.user_id,
        run_id=args.run_id,
        first=sent.count,
        progress=sent.progress,
    )
    summary = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    print(f"thread {thread_id}: {summary or 'nothing new'}")
    return 0


class _SentCount:
    """How many of a transcript's leading turns are appended already (`--sent-file`), with the
    id of the last of them: read at start (0 without the file, when it counts more turns than
    the file holds, or when the turn at that place is no longer the one sent, as after a
    rewound conversation), then written back as turns land, so a run stopped halfway resumes
    where it stopped."""

    def __init__(self, path: str | None, thread_id: str, turns: list[tuple[str, str]]):
        from chalicelib.transcript_file import turn_msg_id

        self.path = Path(path) if path else None
        self.last = lambda n: turn_msg_id(thread_id, n - 1, *turns[n - 1])
        self.count = 0
        if self.path is not None:
            try:
                count, _, last = self.path.read_text().strip().partition(" ")
                self.count = int(count or 0)
            except (OSError, ValueError):
                self.count, last = 0, ""
            if not 0 < self.count <= len(turns) or self.last(self.count) != last:
                self.count = 0

    def progress(self, done: int, total: int) -> None:
        """Turns up to `done` landed: the progress bar, and the count written back."""
        _progress_bar(done, total)
        if self.path is not None and done > 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            part = self.path.with_name(self.path.name + ".part")
            part.write_text(f"{done} {self.last(done)}\n")
            part.replace(self.path)  # whole or not at all, should the run be killed


_NOT_RECORDING = (
    "namespace {!r} does not record conversations; an admin turns it on"
    " with conversation.set_logging (enabled=true). Nothing was appended."
)


def _ingest_over_http(
    args: argparse.Namespace, thread_id: str, turns: list[tuple[str, str]], sent: _SentCount
) -> Counter[str]:
    """The same turns, with the same ids, through a running server's conversation.append
    (LOOM_TOKEN as the bearer token): for a machine that reaches Loom only over HTTP."""
    from chalicelib.cli_http import post_op, scope
    from chalicelib.transcript_file import turn_msg_id  # chalicelib.ops is slow to import

    counts: Counter[str] = Counter()
    for i, (role, content) in enumerate(turns):
        if i < sent.count:
            continue  # appended by an earlier run
        body = scope(args) | {
            "thread_id": thread_id,
            "msg_id": turn_msg_id(thread_id, i, role, content),
            "role": role,
            "content": content,
            "user_id": args.user_id,
            "run_id": args.run_id,
        }
        reason = post_op(args.url, "conversation.append", body, args.timeout).get("reason")
        if reason == "logging_disabled":
            raise LoomError(_NOT_RECORDING.format(args.namespace))
        counts[reason or "stored"] += 1
        sent.progress(i + 1, len(turns))
    return counts


def _brief_and_extraction(
    args: argparse.Namespace, thread_id: str, turns: list[tuple[str, str]]
) -> None:
    """--brief and --extract, before the turns are appended: at a session's end they are what
    matters most, and they do not wait for recording to be on."""
    from chalicelib.cli_http import DoneCount, extract_over_http, save_brief_over_http

    if not args.sent_file:
        raise LoomError("--brief and --extract keep their progress beside --sent-file: give one")
    if args.brief:
        done = DoneCount(Path(args.sent_file + ".brief"), len(turns))
        print(save_brief_over_http(args, thread_id, turns, done))
    if args.extract:
        done = DoneCount(Path(args.sent_file + ".extract"), len(turns))
        print(extract_over_http(args, thread_id, turns, done))


def cmd_recall(args: argparse.Namespace, deps: Deps) -> int:
    """What Loom knows for a session's scope, or for a prompt (`context.pack`), as Markdown."""
    from chalicelib.cli_http import recall_over_http

    print(recall_over_http(args))
    return 0


def cmd_drops(args: argparse.Namespace, deps: Deps) -> int:
    """What extraction dropped in a namespace over the last hours, summed by stage and reason,
    with the model tokens spent on what was lost (an answer that did not parse)."""
    from chalicelib.services.admin import drop_counts

    org = args.org or deps.settings.org
    rows = drop_counts(deps, org, args.namespace, args.hours)
    if not rows:
        print(f"no drops in {org}/{args.namespace} in the last {args.hours} hours")
        return 0
    print(f"{'stage':34} {'reason':24} {'count':>7} {'tokens_in':>10} {'tokens_out':>10}")
    for r in rows:
        print(
            f"{r['stage']:34} {r['reason']:24} {r['count']:>7}"
            f" {r['tokens_in']:>10} {r['tokens_out']:>10}"
        )
    return 0


def cmd_model_calls(args: argparse.Namespace, deps: Deps) -> int:
    """Switch every model call of an org off or on (model_calls.set, audited), or show it."""
    from chalicelib.auth import check_name, local_caller
    from chalicelib.registry import call
    from chalicelib.web import load_ops

    load_ops()
    check_name("--org", args.org)
    caller = local_caller(args.org)
    if args.state == "status":
        out = call("model_calls.get", {"org": args.org}, caller, deps).body
    else:
        body = {"org": args.org, "enabled": args.state == "on"}
        out = call("model_calls.set", body, caller, deps).body
    state = "on" if out["enabled"] else "off"
    released = f"; {out['released']} held requests released" if out.get("released") else ""
    print(f"model calls of {args.org}: {state}{released}")
    return 0


def cmd_partitions_split(args: argparse.Namespace, deps: Deps) -> int:
    """Move the turns stored before partitions into month partitions, saying each month on
    stderr; exit 1 when a month's move gave up waiting for the lock (nothing of it moved)."""
    from chalicelib.services.partition_split import split_earlier_turns

    if not re.fullmatch(r"\d{1,6}(ms|s|min)", args.lock_timeout):
        _say(f"error: --lock-timeout {args.lock_timeout}: give a time such as 500ms, 5s or 1min")
        return 2
    run = split_earlier_turns(deps, months=args.months, lock_timeout=args.lock_timeout, say=_say)
    if run.busy:
        _say(
            f"error: the transcript was busy for {args.lock_timeout}; nothing of the next month"
            " moved. Run `loom partitions split` again (at a quieter time, or with a longer"
            " --lock-timeout)"
        )
    print(
        f"{run.months} month(s) moved ({run.turns:,} turns); {run.left} month(s) left in the"
        " table of turns stored before partitions"
    )
    return 1 if run.busy else 0


def cmd_reextract(args: argparse.Namespace, deps: Deps) -> int:
    """Extract a namespace's recorded transcripts again into a fresh namespace, each request
    with what its first extraction read; prints what it wrote. Exit 1 when a request failed."""
    from chalicelib.auth import check_name
    from chalicelib.ops.reextract import reextract_namespace
    from chalicelib.web import load_ops

    load_ops()  # each request is replayed through its op
    for option, name in (
        ("--org", args.org),
        ("--namespace", args.namespace),
        ("--into", args.into),
    ):
        check_name(option, name)
    if args.namespace == args.into:
        raise LoomError("--into must name another namespace; the source is only read")

    def progress(done: int, total: int) -> None:
        _progress_bar(done, total, unit="requests", always=True)

    done = reextract_namespace(deps, args.org, args.namespace, args.into, progress)
    for request_id, error in done.failed:
        _say(f"error: request {request_id}: {error}")
    print(done.summary(args.org, args.into))
    return 1 if done.failed else 0


def cmd_demote_activity_narration(args: argparse.Namespace, deps: Deps) -> int:
    """Demote and label a namespace's junk memories through memory.apply; a dry run without
    --apply. Never deletes."""
    from chalicelib.auth import check_name
    from chalicelib.fact_quality import ACTIVITY_NARRATION, TEXT_CLASSES
    from chalicelib.ops.memory_quality import demote_namespace
    from chalicelib.web import load_ops

    load_ops()  # the changes go through memory.apply, with its checks and audit
    org = args.org or deps.settings.org
    check_name("--org", org)
    check_name("--namespace", args.namespace)

    def progress(done: int, total: int) -> None:
        _progress_bar(done, total, unit="memories", always=True)

    done = demote_namespace(
        deps,
        org,
        args.namespace,
        classes=TEXT_CLASSES if args.classifier == "fact_quality" else ACTIVITY_NARRATION,
        apply=args.apply,
        label_only=args.label_only,
        days=args.days,
        factor=args.factor,
        progress=progress,
    )
    print(done.summary(org, args.namespace, dry_run=not args.apply))
    return 0


def _factor(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 1, not {text}")
    return value


def _int_between(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {low}-{high}{why}, not {value}")
        return value

    return parse


def _timeout_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 600:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 600 seconds, not {text}")
    return value


def _http_url(text: str) -> str:
    if not text.lower().startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(
            f"{text!r} needs http:// or https://, e.g. http://127.0.0.1:7777"
        )
    return text


# The subcommands of `loom`, each added by its own function below.
Subparsers = argparse._SubParsersAction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loom", description="Loom: the memory service.")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_serve(sub)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(fn=cmd_migrate)
    _add_token(sub)
    _add_settings(sub)
    _add_ingest_transcript(sub)
    _add_recall(sub)
    _add_drops(sub)
    _add_reextract(sub)
    _add_partitions(sub)
    _add_model_calls(sub)
    _add_demote_activity_narration(sub)
    return parser


def _add_serve(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="serve the HTTP API and the workers")
    serve.add_argument(
        "--port", type=_int_between(1, 65535), default=None, help="default LOOM_PORT (7777)"
    )
    serve.add_argument(
        "--host",
        default=None,
        help="the address to listen on; default LOOM_HOST (127.0.0.1). Any address other"
        " machines reach needs LOOM_AUTH=tokens",
    )
    serve.set_defaults(fn=cmd_serve)


def _add_token(sub: Subparsers) -> None:
    token = sub.add_parser("token", help="API tokens").add_subparsers(dest="action", required=True)
    mint = token.add_parser("mint", help="mint a token (printed as the last line)")
    mint.add_argument("--org", required=True)
    mint.add_argument("--role", required=True, choices=["viewer", "writer", "admin", "org_admin"])
    mint.add_argument("--namespace", default=None, help="bind the token to one namespace")
    mint.add_argument(
        "--read-scope",
        default="namespace",
        choices=["namespace", "own_user", "own_session"],  # own_session is refused, saying why
    )
    mint.add_argument(
        "--read-user-id", default=None, help="the one user an own_user token acts for (required)"
    )
    mint.add_argument("--subject", default=None, help="who the token is for (its principal)")
    mint.add_argument(
        "--agent",
        default=None,
        help="an end user's token for one bot (with --read-user-id): it files that bot's rules",
    )
    mint.add_argument(
        "--expires-in",
        type=_lifetime,
        default=None,
        help="how long the token lives: 90s, 30m, 12h, 30d, 2w (default: until revoked)",
    )
    mint.set_defaults(fn=cmd_token_mint)
    listing = token.add_parser("list", help="list tokens (never the token itself)")
    listing.add_argument("--org", default=None, help="one org's tokens (default: every org)")
    listing.set_defaults(fn=cmd_token_list)
    revoke = token.add_parser("revoke", help="revoke a token at once, on every server")
    revoke.add_argument("token", help="the token itself, or its id from `loom token list`")
    revoke.set_defaults(fn=cmd_token_revoke)


def _add_settings(sub: Subparsers) -> None:
    settings = sub.add_parser("settings", help="live settings").add_subparsers(
        dest="action", required=True
    )
    set_cmd = settings.add_parser("set", help="change a live setting without a restart")
    set_cmd.add_argument("name")
    set_cmd.add_argument("value")
    set_cmd.set_defaults(fn=cmd_settings_set)


def _add_ingest_transcript(sub: Subparsers) -> None:
    ingest = sub.add_parser("ingest-transcript", help="append a transcript file's turns")
    ingest.add_argument("--namespace", required=True)
    ingest.add_argument(
        "--file", required=True, help="Markdown (# user / # assistant), JSON or JSON Lines"
    )
    ingest.add_argument("--org", default=None, help="default LOOM_ORG")
    ingest.add_argument("--agent", default="-")
    ingest.add_argument("--thread-id", default=None, help="default: derived from the file")
    ingest.add_argument("--user-id", default="-")
    ingest.add_argument("--run-id", default="-")
    ingest.add_argument("--dry-run", action="store_true", help="count the turns, append nothing")
    ingest.add_argument(
        "--url",
        type=_http_url,
        default=None,
        help="append through a running server (http://HOST:PORT) instead; under"
        " LOOM_AUTH=tokens set LOOM_TOKEN to a token from `loom token mint`",
    )
    ingest.add_argument(
        "--timeout", type=_timeout_seconds, default=10.0, help="seconds per call with --url"
    )
    ingest.add_argument(
        "--sent-file",
        default=None,
        help="a file counting the transcript's leading turns already appended: only the turns"
        " after them are sent, and the count is written back as they land (for hooks run on a"
        " growing transcript)",
    )
    ingest.add_argument(
        "--clean-text",
        action="store_true",
        help="remove NUL characters and lone surrogates (which a turn cannot hold) instead of"
        " refusing the file (for hooks, which must not lose a conversation to one character)",
    )
    ingest.add_argument(
        "--brief",
        choices=("precompact", "session_end"),
        default=None,
        help="with --url: also save the session brief auto/<project>/<branch> from the turns"
        " not yet in one, with this trigger",
    )
    ingest.add_argument("--project", default="", help="the brief's project")
    ingest.add_argument("--branch", default="", help="the brief's branch")
    ingest.add_argument(
        "--extract",
        action="store_true",
        help="with --url: also hand the turns not handed over yet to deferred extraction",
    )
    ingest.set_defaults(fn=cmd_ingest_transcript)


def _add_recall(sub: Subparsers) -> None:
    recall = sub.add_parser("recall", help="what Loom knows for a session or a prompt")
    recall.add_argument("--url", type=_http_url, required=True, help="the running server")
    recall.add_argument("--namespace", required=True)
    recall.add_argument("--org", default=None)
    recall.add_argument("--agent", default="-")
    recall.add_argument("--user-id", default="-")
    recall.add_argument("--project", default="", help="with --branch: the brief to include")
    recall.add_argument("--branch", default="")
    recall.add_argument("--query", default="", help="the prompt: what it finds, ranked")
    recall.add_argument(
        "--tokens", type=_int_between(100, 32_000), default=1500, help="the budget (tokens)"
    )
    recall.add_argument("--timeout", type=_timeout_seconds, default=5.0)
    recall.set_defaults(fn=cmd_recall)


def _add_drops(sub: Subparsers) -> None:
    drops = sub.add_parser("drops", help="what extraction dropped, summed")
    drops.add_argument("--namespace", required=True)
    drops.add_argument("--org", default=None, help="default LOOM_ORG")
    drops.add_argument(
        "--hours", type=_int_between(1, 720, " (drops are kept 30 days)"), default=24
    )
    drops.set_defaults(fn=cmd_drops)


def _add_model_calls(sub: Subparsers) -> None:
    switch = sub.add_parser("model-calls", help="switch every model call of an org off or on")
    switch.add_argument("state", choices=("off", "on", "status"))
    switch.add_argument("--org", required=True)
    switch.set_defaults(fn=cmd_model_calls)


def _add_partitions(sub: Subparsers) -> None:
    parts = sub.add_parser("partitions", help="the transcript's month partitions")
    actions = parts.add_subparsers(dest="action", required=True)
    split = actions.add_parser(
        "split",
        help="move the turns stored before partitions into month partitions, newest month"
        " first, one transaction a month (stop it any time; run it again to go on)",
    )
    split.add_argument(
        "--months",
        type=_int_between(1, 100_000),
        default=None,
        help="move at most this many months this run (default: all)",
    )
    split.add_argument(
        "--lock-timeout",
        default="5s",
        help="how long a month's move waits for the transcript's lock before giving up (5s)",
    )
    split.set_defaults(fn=cmd_partitions_split)


def _add_reextract(sub: Subparsers) -> None:
    reextract = sub.add_parser("reextract", help="extract a namespace again into a fresh one")
    reextract.add_argument("--org", required=True)
    reextract.add_argument("--namespace", required=True, help="the source (only read)")
    reextract.add_argument("--into", required=True, help="the destination namespace")
    reextract.set_defaults(fn=cmd_reextract)


def _add_demote_activity_narration(sub: Subparsers) -> None:
    demote = sub.add_parser(
        "demote-activity-narration",
        help="demote and label a namespace's junk memories (a dry run without --apply)",
    )
    demote.add_argument("--namespace", required=True)
    demote.add_argument("--org", default=None, help="default LOOM_ORG")
    demote.add_argument(
        "--apply", action="store_true", help="change the rows; without it, report what would"
    )
    demote.add_argument(
        "--classifier",
        choices=["activity_narration", "fact_quality"],
        default="activity_narration",
        help="activity_narration (default): trajectory steps and session narration;"
        " fact_quality: every junk class",
    )
    demote.add_argument(
        "--days",
        type=_int_between(1, 3650),
        default=None,
        help="leave alone memories memory.get read by key in the last N days",
    )
    demote.add_argument(
        "--factor", type=_factor, default=0.25, help="confidence is multiplied by this (0.25)"
    )
    demote.add_argument(
        "--label-only",
        action="store_true",
        help="only tag them quality:<class>; leave their confidence",
    )
    demote.set_defaults(fn=cmd_demote_activity_narration)


def _bad_settings(exc: ValidationError | SettingsError) -> list[str]:
    """One line per LOOM_* variable that does not validate: its name, value and what is wrong."""
    if isinstance(exc, SettingsError):
        return [f"{exc}; fix or unset that LOOM_* variable"]
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else ""
        name = field.upper()  # a field name, or the alias it was read under (OPENAI_API_KEY)
        var = name if name.startswith(("LOOM_", "OPENAI_")) else f"LOOM_{name}"
        value = "" if "url" in field or "key" in field else f"={str(err['input'])[:60]}"
        said = err["msg"].removeprefix("Value error, ")
        if said.startswith(f"{var}="):  # a refusal that names its setting and fix itself
            lines.append(said)
            continue
        lines.append(f"{var}{value}: {said}; fix or unset {var}")
    return lines


def _database_unreachable(settings: Settings, exc: psycopg.OperationalError) -> str:
    said = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    if settings.database_url:
        return (
            f"cannot connect to LOOM_DATABASE_URL ({said}): check that PostgreSQL runs at that"
            " host and port, or unset LOOM_DATABASE_URL to use the embedded database"
        )
    if settings.database_secret_arn:
        return (
            f"cannot connect to the database of LOOM_DATABASE_SECRET_ARN ({said}): check"
            " LOOM_DATABASE_HOST and that the database runs"
        )
    return (
        f"the embedded database in LOOM_DATA_DIR={settings.data_dir} does not answer ({said});"
        " try again, or set LOOM_DATA_DIR to another directory"
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with logging_to_stderr():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        deps = Deps()
    except (ValidationError, SettingsError) as exc:
        for line in _bad_settings(exc):
            _say(f"error: {line}")
        return 2
    set_deps(deps)
    try:
        return int(args.fn(args, deps))
    except LoomError as exc:
        _say(f"error: {exc.message}")
        return 2
    except psycopg.OperationalError as exc:
        _say(f"error: {_database_unreachable(deps.settings, exc)}")
        return 2
    finally:
        if args.command != "serve":
            deps.close()


# What the cloud's `admin` function runs: the commands that only need the database (no files,
# no server).
ADMIN_COMMANDS = (
    "migrate",
    "token",
    "settings",
    "drops",
    "reextract",
    "demote-activity-narration",
    "model-calls",
    "partitions",
)


def run_captured(argv: Any) -> dict[str, Any]:
    """A `loom` command run inside the cloud (the `admin` function, in the VPC beside the
    database): its exit code and what it printed."""
    if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
        return {"exit_code": 2, "stdout": "", "stderr": 'error: send {"args": ["migrate"]}'}
    if argv[0] not in ADMIN_COMMANDS:
        allowed = ", ".join(ADMIN_COMMANDS)
        return {"exit_code": 2, "stdout": "", "stderr": f"error: the admin function runs {allowed}"}
    out, err = io.StringIO(), io.StringIO()
    serving = current_deps()  # the command builds and closes its own: the function's stays
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else 2
        finally:
            set_deps(serving)
    return {"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    sys.exit(main())

"""The `loom` command: serve, migrate, token mint, settings set, ingest-transcript."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from chalicelib.config import BOOT_ONLY, Settings, setting_name, with_overrides
from chalicelib.deps import Deps, set_deps
from chalicelib.errors import LoomError

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_serve(args: argparse.Namespace, deps: Deps) -> int:
    """Embedded database + migrations + `chalice local` + the scheduled workers beside it."""
    from chalicelib.store.migrate import migrate
    from chalicelib.workers.schedule import run_forever

    settings = deps.settings
    if not settings.database_url:
        _say(f"Starting the embedded PostgreSQL in {Path(settings.data_dir).resolve()} ...")
    url = deps.database_url()
    applied = migrate(url)
    _say(f"Database ready ({len(applied)} migration(s) applied).")
    env = dict(os.environ, LOOM_DATABASE_URL=url)
    chalice = Path(sys.executable).parent / "chalice"
    port = str(args.port or settings.port)
    cmd = [str(chalice), "local", "--host", "127.0.0.1", "--port", port, "--stage", "local"]
    cmd.append("--no-autoreload")  # a served API does not restart when a file is saved
    child = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env)
    _say(
        f"Loom is serving on http://127.0.0.1:{port} (auth {settings.auth}, org {settings.org});"
        " Ctrl-C stops it and keeps the data."
    )
    stop = threading.Event()
    workers = threading.Thread(target=run_forever, args=(deps, stop), daemon=True)
    workers.start()
    try:
        return child.wait()
    except KeyboardInterrupt:
        _say("Stopping ...")
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
        return 0
    finally:
        stop.set()
        deps.close()


def cmd_migrate(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.store.migrate import migrate

    applied = migrate(deps.database_url())
    print(f"applied: {', '.join(applied)}" if applied else "up to date")
    return 0


def cmd_token_mint(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.auth import mint_token

    token = mint_token(
        deps,
        org=args.org,
        role=args.role,
        namespace=args.namespace,
        read_scope=args.read_scope,
        read_user_id=args.read_user_id,
        subject=args.subject,
    )
    _say(f"Minted a {args.role} token for org {args.org}. It is shown once; store it now.")
    print(token)
    return 0


def cmd_settings_set(args: argparse.Namespace, deps: Deps) -> int:
    from chalicelib.store.live_settings import set_setting

    name = setting_name(args.name)
    if name not in Settings.model_fields:
        raise LoomError(f"unknown setting {args.name!r}; see README.md for the list")
    if name in BOOT_ONLY:
        raise LoomError(f"{args.name} is read at start only: set LOOM_{name.upper()} and restart")
    try:
        with_overrides(deps.settings, {name: args.value})
    except ValidationError as exc:
        raise LoomError(f"invalid value for {name}: {exc.errors()[0]['msg']}") from exc
    with deps.pool.connection() as conn:
        set_setting(conn, name, args.value)
    print(f"{name} = {args.value} (live; servers pick it up within their refresh interval)")
    return 0


def _progress_bar(done: int, total: int) -> None:
    """A one-line progress bar on stderr for long files."""
    if total <= BATCH_FOR_PROGRESS:
        return
    width = 30
    filled = int(width * done / total)
    end = "\n" if done >= total else ""
    sys.stderr.write(f"\r[{'#' * filled}{' ' * (width - filled)}] {done}/{total} turns{end}")
    sys.stderr.flush()


BATCH_FOR_PROGRESS = 64


def cmd_ingest_transcript(args: argparse.Namespace, deps: Deps) -> int:
    """Append every turn of a transcript file; run twice, it adds nothing the second time."""
    from chalicelib.ops.transcript_ingest import ingest_turns, transcript_thread_id
    from chalicelib.store.namespaces import conversation_logging_enabled
    from chalicelib.transcript_file import TranscriptError, parse_transcript

    try:
        text = Path(args.file).read_text(encoding="utf-8")
        turns = parse_transcript(text)
    except (OSError, UnicodeDecodeError, TranscriptError) as exc:
        raise LoomError(f"cannot read {args.file}: {exc}") from exc
    org = args.org or deps.settings.org
    thread_id = args.thread_id or transcript_thread_id(text)
    if args.dry_run:
        roles = ", ".join(f"{n} {r}" for r, n in sorted(Counter(r for r, _ in turns).items()))
        print(f"{len(turns)} turns ({roles}) would go to thread {thread_id}")
        return 0
    with deps.pool.connection() as conn:
        recording = conversation_logging_enabled(conn, org, args.namespace)
    if not recording:
        raise LoomError(
            f"namespace {args.namespace!r} does not record conversations; an admin turns it on"
            " with conversation.set_logging (enabled=true). Nothing was appended."
        )
    counts = ingest_turns(
        deps,
        org=org,
        namespace=args.namespace,
        agent=args.agent,
        thread_id=thread_id,
        turns=turns,
        user_id=args.user_id,
        run_id=args.run_id,
        progress=_progress_bar,
    )
    summary = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    print(f"thread {thread_id}: {summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="loom", description="Loom: the memory service.")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="serve the HTTP API and the workers")
    serve.add_argument("--port", type=int, default=None, help="default LOOM_PORT (7777)")
    serve.set_defaults(fn=cmd_serve)

    sub.add_parser("migrate", help="apply database migrations").set_defaults(fn=cmd_migrate)

    token = sub.add_parser("token", help="API tokens").add_subparsers(dest="action", required=True)
    mint = token.add_parser("mint", help="mint a token (printed as the last line)")
    mint.add_argument("--org", required=True)
    mint.add_argument("--role", required=True, choices=["viewer", "writer", "admin", "org_admin"])
    mint.add_argument("--namespace", default=None, help="bind the token to one namespace")
    mint.add_argument(
        "--read-scope", default="namespace", choices=["namespace", "own_user", "own_session"]
    )
    mint.add_argument("--read-user-id", default=None, help="pin an own_user token to one user")
    mint.add_argument("--subject", default=None, help="who the token is for (its principal)")
    mint.set_defaults(fn=cmd_token_mint)

    settings = sub.add_parser("settings", help="live settings").add_subparsers(
        dest="action", required=True
    )
    set_cmd = settings.add_parser("set", help="change a live setting without a restart")
    set_cmd.add_argument("name")
    set_cmd.add_argument("value")
    set_cmd.set_defaults(fn=cmd_settings_set)

    ingest = sub.add_parser("ingest-transcript", help="append a transcript file's turns")
    ingest.add_argument("--namespace", required=True)
    ingest.add_argument("--file", required=True, help="Markdown (# user / # assistant) or JSON")
    ingest.add_argument("--org", default=None, help="default LOOM_ORG")
    ingest.add_argument("--agent", default="-")
    ingest.add_argument("--thread-id", default=None, help="default: derived from the file")
    ingest.add_argument("--user-id", default="-")
    ingest.add_argument("--run-id", default="-")
    ingest.add_argument("--dry-run", action="store_true", help="count the turns, append nothing")
    ingest.set_defaults(fn=cmd_ingest_transcript)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    deps = Deps()
    set_deps(deps)
    try:
        return int(args.fn(args, deps))
    except LoomError as exc:
        _say(f"error: {exc.message}")
        return 2
    finally:
        if args.command != "serve":
            deps.close()


if __name__ == "__main__":
    sys.exit(main())

"""Appending a whole transcript: stable ids, so a second run of the same file adds nothing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from chalicelib.deps import Deps
from chalicelib.errors import ValidationFailedError
from chalicelib.registry import validated
from chalicelib.services.turn_writer import record_turns
from chalicelib.store.turn_writes import NewTurn
from chalicelib.transcript_file import turn_msg_id

BATCH = 64


def check_turns(
    org: str,
    namespace: str,
    agent: str,
    thread_id: str,
    turns: list[tuple[str, str]],
    user_id: str = "-",
    run_id: str = "-",
) -> None:
    """Raise ValidationFailedError, naming the turn, for the first turn conversation.append
    would refuse."""
    common = {"org": org, "namespace": namespace, "agent": agent, "thread_id": thread_id}
    common |= {"user_id": user_id, "run_id": run_id}
    for i, (role, content) in enumerate(turns, start=1):
        try:
            validated("conversation.append", {**common, "role": role, "content": content})
        except ValidationFailedError as exc:
            raise ValidationFailedError(f"turn {i}: {exc.message}") from exc


def recording_enabled(deps: Deps, org: str, namespace: str) -> bool:
    """Whether the namespace records conversations (an admin turned it on)."""
    from chalicelib.store.namespaces import conversation_logging_enabled

    with deps.pool.connection() as conn:
        return conversation_logging_enabled(conn, org, namespace)


def ingest_turns(
    deps: Deps,
    *,
    org: str,
    namespace: str,
    agent: str,
    thread_id: str,
    turns: list[tuple[str, str]],
    user_id: str = "-",
    run_id: str = "-",
    first: int = 0,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> Counter[str]:
    """Record the turns from position `first` on (those before it were appended already) in
    batches (one embedding call a batch); counts answers by reason. The caller has checked
    the turns with `check_turns`, so none is refused halfway."""
    new = [
        NewTurn(
            org=org,
            namespace=namespace,
            thread_id=thread_id,
            agent=agent,
            msg_id=turn_msg_id(thread_id, i, role, content),
            role=role,
            content=content,
            user_id=user_id,
            run_id=run_id,
        )
        for i, (role, content) in enumerate(turns)
    ]
    counts: Counter[str] = Counter()
    for start in range(first, len(new), BATCH):
        for answer in record_turns(deps, new[start : start + BATCH]):
            counts[answer.reason or "stored"] += 1
        progress(min(start + BATCH, len(new)), len(new))
    return counts

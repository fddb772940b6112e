"""`loom partitions split`: the turns stored before partitions move into month partitions, a
month a transaction, with progress (docs/decisions/0033-splitting-the-earlier-table.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chalicelib.deps import Deps
from chalicelib.store.partition_split import remaining, split_newest_month
from chalicelib.store.pool import autocommit_connection


@dataclass(frozen=True)
class SplitRun:
    months: int  # months moved by this run
    turns: int  # turns they held
    left: int  # months still in the earlier table
    busy: bool  # stopped because the lock was not had in time


def split_earlier_turns(
    deps: Deps,
    *,
    months: int | None,
    lock_timeout: str,
    say: Callable[[str], None],
) -> SplitRun:
    """Move up to `months` (None: every) months of the earlier table into partitions of their
    own, newest first, saying each as it is done."""
    moved = turns = 0
    with autocommit_connection(deps.pool) as conn:
        total = remaining(conn).months
        while months is None or moved < months:
            done = split_newest_month(conn, lock_timeout)
            if done is None:
                break
            if done == "busy":
                return SplitRun(moved, turns, total - moved, busy=True)
            month, count = done
            moved, turns = moved + 1, turns + count
            say(f"{month:%Y-%m}: {count:,} turns moved ({moved} of {total} months)")
    return SplitRun(moved, turns, total - moved, busy=False)

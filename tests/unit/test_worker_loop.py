"""The local worker loop beside `loom serve`: a worker whose pass or cadence fails (its live
setting unread while the database is away) never stops the loop."""

from __future__ import annotations

import threading
import time

from chalicelib.workers import schedule
from chalicelib.workers.schedule import ScheduledWorker


def test_a_cadence_that_cannot_be_read_does_not_stop_the_other_workers():
    """GIVEN two workers: the first's pass and cadence raise (the database is away), the
    second runs every second
    WHEN the loop runs for about three seconds
    THEN the loop is still running and the second worker ran on each second."""
    ran: list[str] = []

    def unreadable(deps: object) -> float:
        raise ConnectionError("the database is restarting")

    def failing_pass(deps: object) -> None:
        ran.append("first")
        raise ConnectionError("the database is restarting")

    workers = [
        ScheduledWorker("first", unreadable, failing_pass),
        ScheduledWorker("second", lambda deps: 1.0, lambda deps: ran.append("second")),
    ]
    stop = threading.Event()
    loop = threading.Thread(
        target=schedule.run_forever, args=(object(), stop, workers), daemon=True
    )
    loop.start()
    time.sleep(3.2)
    alive = loop.is_alive()
    stop.set()
    loop.join(timeout=5)
    assert alive
    assert ran.count("second") >= 3 and ran.count("first") == 1  # next try a minute later

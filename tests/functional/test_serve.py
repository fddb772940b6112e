"""`loom serve` stops everything it started when it is told to stop."""

from __future__ import annotations

import subprocess
import time

from tests.live_server import live_server


def _api_processes(port: str) -> str:
    out = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if "chalice local" in line and port in line)


def test_a_terminated_server_leaves_no_api_process_behind(database_url):
    """GIVEN a running `loom serve` WHEN it gets SIGTERM THEN its `chalice local` child is gone
    too, and the port answers nothing."""
    with live_server(database_url) as base:
        port = base.rsplit(":", 1)[-1]
        assert _api_processes(port)
    deadline = time.monotonic() + 15
    while _api_processes(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _api_processes(port) == ""

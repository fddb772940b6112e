"""The real server (`loom serve`: chalice local, migrations, the workers) on a free port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(database_url: str, **env: str) -> Iterator[str]:
    """Serve on 127.0.0.1 until the block ends; the workers that touch every org stay off."""
    port = _free_port()
    environ = {
        **os.environ,
        "LOOM_DATABASE_URL": database_url,
        "LOOM_EMBEDDER": "fake",
        "LOOM_LLM_PROVIDER": "fake",
        "LOOM_EXTRACTION_QUEUE_ENABLED": "false",
        "LOOM_ENTITY_EXTRACTOR_ENABLED": "false",
        "LOOM_EMBEDDING_WORKER_ENABLED": "false",
        "LOOM_CONVERSATION_TITLER_ENABLED": "false",
        **env,  # a test may replace any of the above
    }
    loom = Path(sys.executable).parent / "loom"
    proc = subprocess.Popen([str(loom), "serve", "--port", str(port)], cwd=ROOT, env=environ)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("loom serve did not come up")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()

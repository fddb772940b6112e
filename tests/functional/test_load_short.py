"""The load script's short form against the real server (`loom serve`, tokens on): a few
seconds of mixed appends, searches, saved messages and brief saves from many tenants at once,
then every acknowledged write read back. `make soak` runs the long form."""

from __future__ import annotations

import asyncio

import httpx2

from soak.faults import restartable_database, token_minter
from soak.load import OPS, make_tenants, prepare, run_load, verify
from tests.live_server import live_server


def test_a_short_mixed_load_loses_nothing_doubles_nothing_and_leaks_nothing():
    """GIVEN 6 tenants (own org, namespace and tokens) WHEN 6 workers run the mix for 3 s THEN
    no request fails, every acknowledged turn, saved message and brief is read back exactly
    once, and no answer holds another tenant's marker. (A database of its own: what the load
    writes must not reach the workers other tests run over every org.)"""
    with restartable_database() as db:
        mint, deps = token_minter(db.url)
        tenants = make_tenants(6, mint)
        report, acked = _run(db.url, tenants)
        deps.close()
    print("\n".join(report.lines()))
    assert report.ok, report.summary()
    assert all(report.latencies[op] for op in OPS), report.summary()
    assert sum(len(ids) for ids in acked.turns.values()) > 10


def _run(url, tenants):
    with live_server(url, LOOM_AUTH="tokens") as base:

        async def go():
            async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
                await prepare(client, tenants)
            report, acked = await run_load(base, tenants, duration=3.0, concurrency=6)
            await verify(base, tenants, acked, report)
            return report, acked

        return asyncio.run(go())

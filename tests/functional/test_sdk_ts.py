"""The TypeScript SDK's own tests (Node's test runner) against the real server (`loom serve`):
the helpers, typed errors, generated types in step with /openapi.json, and the official
TypeScript MCP client on /mcp."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from tests.live_server import live_server
from tests.sdk_ts import installed_sdk_ts


@pytest.fixture(scope="module")
def server(database_url):
    with live_server(database_url) as base:
        yield base


def test_the_typescript_sdk_passes_its_node_tests_against_a_live_server(server):
    """GIVEN `loom serve` and sdk-ts installed from its lock WHEN `npm test` runs (tsc over the
    SDK and its tests, then `node --test`) with LOOM_BASE_URL pointing at the server THEN every
    test file passes: sdk, errors, generated types and the MCP client."""
    sdk = installed_sdk_ts()
    env = {**os.environ, "LOOM_BASE_URL": server, "NO_COLOR": "1"}
    typecheck = subprocess.run(
        [str(sdk / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json", "--noEmit"],
        cwd=sdk, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert typecheck.returncode == 0, typecheck.stdout[-4000:]
    files = sorted(str(p.relative_to(sdk)) for p in (sdk / "test").glob("*.test.ts"))
    # `npm test` with the TAP reporter, whichever reporter this Node takes by default.
    done = subprocess.run(
        ["node", "--import", "tsx", "--test", "--test-reporter=tap", *files],
        cwd=sdk, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    counts = dict(re.findall(r"^# (pass|fail|cancelled|skipped|todo) (\d+)$", out, re.M))
    assert counts.get("fail") == "0" and counts.get("cancelled") == "0", out[-6000:]
    assert int(counts.get("pass", "0")) >= 11, out[-6000:]
    for suite in ("Agent and Session", "errors", "MCP with @modelcontextprotocol/sdk"):
        assert re.search(rf"^ok \d+ - {re.escape(suite)}$", out, re.M), f"{suite!r} did not pass"
    assert re.search(r"^ok \d+ - src/generated is what /openapi.json generates", out, re.M)

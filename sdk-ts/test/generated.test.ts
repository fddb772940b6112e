/** The committed generated types are what the live server's /openapi.json generates. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { promisify } from "node:util";

import { BASE_URL } from "./helpers.js";

const here = new URL("..", import.meta.url).pathname;

it("src/generated is what /openapi.json generates (run `npm run generate` when it is not)", async () => {
  const out = await mkdtemp(join(tmpdir(), "loom-sdk-ts-"));
  try {
    await promisify(execFile)(
      process.execPath,
      ["scripts/generate.mjs", `${BASE_URL}/openapi.json`, out],
      { cwd: here },
    );
    for (const file of ["schema.ts", "ops.ts"]) {
      const fresh = await readFile(join(out, file), "utf8");
      const committed = await readFile(join(here, "src", "generated", file), "utf8");
      assert.ok(
        fresh === committed,
        `src/generated/${file} is stale: npm run generate -- ${BASE_URL}/openapi.json`,
      );
    }
  } finally {
    await rm(out, { recursive: true, force: true });
  }
});

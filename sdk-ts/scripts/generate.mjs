// Writes src/generated/schema.ts (openapi-typescript's types of every op) and
// src/generated/ops.ts (each op's kind and the identity fields its input takes) from Loom's
// OpenAPI document: `npm run generate -- [URL or file] [out dir]`, by default from a running
// server. A test regenerates both from the live /openapi.json and compares them with these.
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";

const source = process.argv[2] ?? "http://localhost:7777/openapi.json";
const outDir = process.argv[3] ?? new URL("../src/generated/", import.meta.url).pathname;
const IDENTITY = ["org", "namespace", "agent"];
const HEADER =
  "// Generated from Loom's OpenAPI document by `npm run generate` (scripts/generate.mjs):\n" +
  "// do not edit.\n\n";

async function load(where) {
  if (/^https?:/.test(where)) {
    const resp = await fetch(where);
    if (!resp.ok) throw new Error(`${where}: HTTP ${resp.status}`);
    return await resp.text();
  }
  return await readFile(where, "utf8");
}

function opsModule(doc) {
  const lines = [];
  for (const item of Object.values(doc.paths)) {
    const post = item.post;
    const request = post.requestBody.content["application/json"].schema;
    const taken = IDENTITY.filter((f) => f in (request.properties ?? {}));
    lines.push(
      `  ${JSON.stringify(post.operationId)}: [${JSON.stringify(post["x-loom-kind"])}, ${JSON.stringify(taken)}],`,
    );
  }
  lines.sort();
  return (
    HEADER +
    "/** op name: [kind, the identity fields its input takes]; kinds read and idempotent are\n" +
    " * retried on 503, and an Agent fills in only the identity fields an op takes. */\n" +
    "export const OPS = {\n" +
    lines.join("\n") +
    "\n} as const satisfies Record<string, readonly [string, readonly string[]]>;\n"
  );
}

const text = await load(source);
// A field with a default is optional in a request (openapi-typescript would require it).
const ast = await openapiTS(JSON.parse(text), { defaultNonNullable: false });
await mkdir(outDir, { recursive: true });
await writeFile(join(outDir, "schema.ts"), HEADER + astToString(ast));
await writeFile(join(outDir, "ops.ts"), opsModule(JSON.parse(text)));

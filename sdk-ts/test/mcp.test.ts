/** The official TypeScript MCP client (Streamable HTTP) against the live server's /mcp. */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { Agent } from "../src/index.js";
import { BASE_URL, fresh } from "./helpers.js";

async function connect(query: string): Promise<Client> {
  const client = new Client({ name: "loom-sdk-ts-test", version: "0.1.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${BASE_URL}/mcp${query}`)));
  return client;
}

async function toolNames(query: string): Promise<string[]> {
  const client = await connect(query);
  try {
    return (await client.listTools()).tools.map((t) => t.name).sort();
  } finally {
    await client.close();
  }
}

/** The tools each listing should hold, by the OpenAPI document's x-loom-mcp of every op. */
async function expectedListings(): Promise<{ core: string[]; all: string[] }> {
  const doc = (await (await fetch(`${BASE_URL}/openapi.json`)).json()) as {
    paths: Record<string, { post: { operationId: string; "x-loom-mcp": string } }>;
  };
  const ops = Object.values(doc.paths).map((p) => p.post);
  const named = (sets: string[]) =>
    ops
      .filter((o) => sets.includes(o["x-loom-mcp"]))
      .map((o) => `loom_${o.operationId.replaceAll(".", "_")}`);
  return {
    core: [...named(["core"]), "loom_op"].sort(),
    all: [...named(["core", "all"]), "loom_op"].sort(),
  };
}

describe("MCP with @modelcontextprotocol/sdk", () => {
  const namespace = fresh("ts-mcp");
  let client: Client;

  before(async () => {
    await new Agent("local", namespace, "-", { baseUrl: BASE_URL }).conversations.setLogging(true);
    client = await connect(`?toolset=all&namespace=${namespace}`);
  });
  after(async () => client?.close());

  it("lists the core tools by default and every listed tool with ?toolset=all", async () => {
    const expected = await expectedListings();
    const [core, all] = [await toolNames(""), await toolNames("?toolset=all")];
    assert.deepEqual(core, expected.core);
    assert.deepEqual(all, expected.all);
    assert.ok(core.includes("loom_search") && !core.includes("loom_conversation_append"));
    assert.ok(
      all.includes("loom_conversation_append") && !all.includes("loom_conversation_search"),
    );
  });

  it("appends a turn, finds it with loom_search and reads it back through loom_op", async () => {
    const appended = await client.callTool({
      name: "loom_conversation_append",
      arguments: {
        thread_id: "mcp-ts",
        role: "user",
        content: "Hello from the TypeScript MCP client.",
      },
    });
    const searched = await client.callTool({
      name: "loom_search",
      arguments: { query: "Hello from the TypeScript MCP client", sections: ["conversation"] },
    });
    const got = await client.callTool({
      name: "loom_op",
      arguments: {
        op: "conversation.get",
        args: { thread_id: "mcp-ts", agent: "-", include_messages: true },
      },
    });
    const hidden = await client.callTool({
      name: "loom_op",
      arguments: { op: "conversation.search", args: { query: "x" } },
    });

    assert.equal(appended.isError ?? false, false);
    assert.equal((appended.structuredContent as { stored: boolean }).stored, true);
    const hits = (searched.structuredContent as { conversation: { thread_id: string }[] })
      .conversation;
    assert.deepEqual(
      hits.map((h) => h.thread_id),
      ["mcp-ts"],
    );
    const messages = (got.structuredContent as { messages: { content: string }[] }).messages;
    assert.deepEqual(
      messages.map((m) => m.content),
      ["Hello from the TypeScript MCP client."],
    );
    assert.equal(hidden.isError, true);
  });
});

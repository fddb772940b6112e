/** The SDK's helpers against a live server (`loom serve`, auth off): LOOM_BASE_URL. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  Agent,
  LoomError,
  UnknownOpError,
  ValidationFailedError,
  type OpResult,
} from "../src/index.js";
import { BASE_URL, fresh } from "./helpers.js";

describe("Agent and Session", () => {
  it("a session in a namespace that does not record hands its turns to extraction on close", async () => {
    const bot = new Agent("local", fresh("ts-quiet"), "support-bot", { baseUrl: BASE_URL });
    const s = bot.session("thread-42", { userId: "u1" });
    const resumed = await s.resume("resume the billing migration");
    await s.append(
      { role: "user", content: "We moved invoices to the new ledger." },
      { role: "assistant", content: "Noted; I'll update the export job." },
    );
    assert.equal(s.transcriptStored, false);
    await s.close();
    const brief = await bot.briefs.save({
      project: "billing",
      branch: "ledger-move",
      sections: { goal: "Move invoices to the new ledger", next_steps: ["Update the export job"] },
    });
    const batches = await bot.memory.extractionStatusMine(s.queueIds);

    assert.deepEqual([resumed.memories, resumed.transcript], [[], []]);
    assert.deepEqual([resumed.context.text, resumed.context.tokens], ["", 0]);
    assert.deepEqual(
      [brief.brief_key, brief.author, brief.changed],
      ["auto/billing/ledger-move", "model", true],
    );
    assert.deepEqual(
      batches.batches.map((b) => b.status),
      ["pending"],
    );
  });

  it("a recording namespace keeps each turn with its own fields and resume reads the tail", async () => {
    const bot = new Agent("local", fresh("ts-rec"), "support-bot", { baseUrl: BASE_URL });
    await bot.conversations.setLogging(true);
    const s = bot.session("thread-7", { userId: "u1", flushEvery: 100 });
    const answers = await s.append(
      { role: "user", content: "yes", msg_id: "m1" },
      { role: "assistant", content: "Done.", msg_id: "m2", reasoning: "asked" },
      { role: "user", content: "yes", msg_id: "m3" },
    );
    const resumed = await s.resume("", { tail: 2 });

    assert.equal(s.transcriptStored, true);
    assert.deepEqual(
      answers.map((a) => [a.msg_id, a.reason]),
      [
        ["m1", ""],
        ["m2", ""],
        ["m3", ""],
      ],
    );
    assert.deepEqual(
      resumed.transcript.map((t) => [t.msg_id, t.reasoning]),
      [
        ["m2", "asked"],
        ["m3", ""],
      ],
    );
  });

  it("a session flushes to extraction every flushEvery turns", async () => {
    const bot = new Agent("local", fresh("ts-flush"), "bot", { baseUrl: BASE_URL });
    const s = bot.session("thread-f", { userId: "u1", flushEvery: 2 });
    await s.append(
      { role: "user", content: "one", msg_id: "a" },
      { role: "user", content: "two", msg_id: "b" },
      { role: "user", content: "three", msg_id: "c" },
    );
    assert.equal(s.queueIds.length, 1); // two turns flushed, one still buffered
    await s.close();
    assert.equal(s.queueIds.length, 2);
    await s.close(); // nothing left: no empty batch
    assert.equal(s.queueIds.length, 2);
  });

  it("publishes knowledge and reads it back through context, search and ask", async () => {
    const bot = new Agent("local", fresh("ts-reads"), "support-bot", { baseUrl: BASE_URL });
    const published = await bot.knowledge.publish(
      "doc://refunds",
      "Refunds go back to the card used, within five days.",
      { title: "Refunds" },
    );
    await bot.memory.set("user/card", "The customer pays with a company card.");
    const packed = await bot.context("how long do refunds take", { budget_tokens: 500 });
    const found = await bot.search("refunds card");
    const asked = await bot.ask("how long do refunds take");
    const listed = await bot.knowledge.list();

    assert.deepEqual([published.version, published.changed, published.chunks], [1, true, 1]);
    assert.match(packed.text, /## Knowledge/);
    assert.ok(packed.tokens <= 500);
    assert.deepEqual(
      found.knowledge.map((h) => h.uri),
      ["doc://refunds"],
    );
    assert.equal(asked.passages[0]?.whole_document, true);
    assert.deepEqual(
      listed.documents.map((d) => d.uri),
      ["doc://refunds"],
    );
  });

  it("namespace: null erases a user in every namespace of the org", async () => {
    const [a, b] = [fresh("ts-erase-a"), fresh("ts-erase-b")];
    const other = new Agent("local", b, "bot", { baseUrl: BASE_URL });
    const bot = new Agent("local", a, "bot", { baseUrl: BASE_URL });
    await other.memory.set("city", "Lisbon", { user_id: "u-erase" });
    const own = await bot.call("erasure.request", { kind: "user", user_id: "u-erase" });
    const kept = await other.memory.get("city", { user_id: "u-erase" });
    const org = await bot.call("erasure.request", {
      kind: "user",
      user_id: "u-erase",
      namespace: null,
    });
    const gone = await other.memory.get("city", { user_id: "u-erase" });

    assert.deepEqual([own.namespaces, kept.found], [[a], true]);
    assert.deepEqual([org.namespaces, gone.found], [null, false]);
  });
});

describe("errors", () => {
  it("a body that fails validation throws ValidationFailedError carrying the spec's code", async () => {
    const bot = new Agent("local", "ts-errors", "bot", { baseUrl: BASE_URL });
    const error = await bot.call("conversation.get", { thread_id: "" }).catch((e: unknown) => e);
    assert.ok(error instanceof ValidationFailedError && error instanceof LoomError);
    assert.deepEqual(
      [error.status, error.code, error.name],
      [422, "validation_error", "ValidationFailedError"],
    );
  });

  it("an op the server does not know throws UnknownOpError", async () => {
    const bot = new Agent("local", "ts-errors", "bot", { baseUrl: BASE_URL });
    await assert.rejects(bot.call("memory.no_such_op", {}), (e: unknown) => {
      assert.ok(e instanceof UnknownOpError);
      assert.deepEqual([e.status, e.code], [404, "unknown_op"]);
      return true;
    });
  });

  it("a read op answered 503 is retried, a write op is not", async () => {
    let calls = 0;
    let refused = 0;
    // A proxy that answers every other request 503 before the server sees it.
    const flaky: typeof fetch = async (input, init) => {
      if (calls++ % 2 === 0) {
        refused++;
        const body = JSON.stringify({ error: { code: "unavailable", message: "try again" } });
        const headers = { "Content-Type": "application/json" };
        return new Response(body, { status: 503, headers });
      }
      return fetch(input, init);
    };
    const bot = new Agent("local", fresh("ts-retry"), "bot", { baseUrl: BASE_URL, fetch: flaky });
    const read: OpResult<"memory.get"> = await bot.memory.get("nothing");
    assert.deepEqual([read.found, calls, refused], [false, 2, 1]);
    const turns = [{ role: "user" as const, content: "I moved to Lisbon." }];
    await assert.rejects(bot.memory.setFromMessages(turns, { defer: true }), (e: unknown) => {
      assert.ok(e instanceof LoomError);
      assert.deepEqual([e.status, e.code, e.detail, calls], [503, "unavailable", "try again", 3]);
      return true;
    });
  });
});

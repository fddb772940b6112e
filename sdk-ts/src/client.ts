/** The Loom client: an `Agent` binds an org, namespace and agent; every op is one POST. */
import createClient from "openapi-fetch";

import { LoomError, errorFor } from "./errors.js";
import { OPS } from "./generated/ops.js";
import type { operations, paths } from "./generated/schema.js";

/** Every op this SDK was generated with, e.g. `"conversation.append"`. */
export type OpName = keyof typeof OPS & keyof operations;
type Identity = "org" | "namespace" | "agent";
type JsonOf<T> = T extends { content: { "application/json": infer B } } ? B : never;
/** An op's request body, as the OpenAPI document has it. */
export type OpInput<Op extends OpName> = JsonOf<NonNullable<operations[Op]["requestBody"]>>;
/** An op's answer, as the OpenAPI document has it. */
export type OpResult<Op extends OpName> = JsonOf<operations[Op]["responses"][200]>;
/** What a caller passes: the op's input, where the identity fields the Agent fills in are
 * optional (`null` leaves one out: `namespace: null` asks erasure.request for the whole org). */
export type OpFields<Op extends OpName> = Omit<OpInput<Op>, Identity> & {
  [K in Extract<keyof OpInput<Op>, Identity>]?: OpInput<Op>[K] | null;
};
/** The fields argument: optional when nothing in it is required. */
type Args<T> = {} extends T ? [fields?: T] : [fields: T];
type Rest<Op extends OpName, Taken extends string> = Args<Omit<OpFields<Op>, Taken>>;

const RETRY_DELAYS_MS = [200, 500, 1000, 2000]; // for read and idempotent ops only
const RETRIED_KINDS = new Set(["read", "idempotent"]);

export interface AgentOptions {
  /** Where Loom is: LOOM_BASE_URL, else http://localhost:7777. */
  baseUrl?: string;
  /** A bearer token (servers with LOOM_AUTH=tokens): LOOM_TOKEN by default. */
  token?: string;
  /** Per request, in milliseconds (30 s by default). */
  timeoutMs?: number;
  /** A fetch of your own (a proxy, a test double); the global fetch by default. */
  fetch?: typeof globalThis.fetch;
}

const env = (name: string): string | undefined =>
  (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env[name];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One agent of one namespace: `new Agent("acme", "support", "triage-bot")`. */
export class Agent {
  readonly memory = new Memory(this);
  readonly conversations = new Conversations(this);
  readonly briefs = new Briefs(this);
  readonly knowledge = new Knowledge(this);
  private readonly http: ReturnType<typeof createClient<paths>>;
  private readonly timeoutMs: number;

  constructor(
    readonly org = "",
    readonly namespace = "",
    readonly agent = "-",
    options: AgentOptions = {},
  ) {
    const base = options.baseUrl ?? env("LOOM_BASE_URL") ?? "http://localhost:7777";
    const token = options.token ?? env("LOOM_TOKEN");
    this.http = createClient<paths>({
      baseUrl: base.replace(/\/+$/, ""),
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** POST /v1/<op> with this agent's identity filled in where the op's input takes it; read
   * and idempotent ops are retried on 503 and on network errors. A field given as null or
   * undefined is left out, identity included. */
  call<Op extends OpName>(op: Op, ...[fields]: Args<OpFields<Op>>): Promise<OpResult<Op>>;
  /** An op newer than this SDK: every identity field is filled in, the answer is untyped. */
  call(op: string, fields?: Record<string, unknown>): Promise<Record<string, unknown>>;
  async call(op: string, fields: Record<string, unknown> = {}): Promise<unknown> {
    const known = (OPS as Record<string, readonly [string, readonly string[]]>)[op];
    const [kind, taken] = known ?? ["write", ["org", "namespace", "agent"]];
    const body: Record<string, unknown> = {};
    for (const [name, value] of Object.entries({
      org: this.org,
      namespace: this.namespace,
      agent: this.agent,
    })) {
      if (value && taken.includes(name) && !(name in fields)) body[name] = value;
    }
    for (const [name, value] of Object.entries(fields)) {
      if (value !== null && value !== undefined) body[name] = value;
    }
    const retried = RETRIED_KINDS.has(kind);
    for (let attempt = 0; ; attempt++) {
      const last = !retried || attempt === RETRY_DELAYS_MS.length;
      let answer;
      try {
        // The path is one of the document's, or an op newer than it: typed by the overloads.
        answer = await this.http.POST(`/v1/${op}` as "/v1/context.pack", {
          body: body as never,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (exc) {
        if (last || exc instanceof LoomError) throw exc;
        await sleep(RETRY_DELAYS_MS[attempt]!);
        continue;
      }
      const response: Response = answer.response;
      if (response.status === 503 && !last) {
        await sleep(RETRY_DELAYS_MS[attempt]!);
        continue;
      }
      if (answer.error !== undefined || !response.ok) throw errorFor(response.status, answer.error);
      const data: unknown = answer.data;
      if (data === undefined || data === null || typeof data !== "object") {
        throw new LoomError("bad_response", response.status, String(data).slice(0, 200));
      }
      return data;
    }
  }

  /** One (user, thread) of this agent: `append`, `close`, `resume`. */
  session(threadId: string, options: { userId?: string; flushEvery?: number } = {}): Session {
    return new Session(this, threadId, options.userId ?? "-", options.flushEvery ?? 20);
  }

  /** context.pack: what this agent should know before it answers (memories, knowledge, the
   * session brief, recent turns) as Markdown within `budget_tokens`, in `text`. */
  context(query = "", ...[fields]: Rest<"context.pack", "query">) {
    return this.call("context.pack", { query, ...fields });
  }

  /** One query over every plane, in sections: memory, knowledge, conversation. */
  search(query: string, ...[fields]: Rest<"search", "query">) {
    return this.call("search", { query, ...fields });
  }

  /** memory.ask: passages from every plane, and with `synthesize: true` a cited answer. */
  ask(question: string, ...[fields]: Rest<"memory.ask", "question">) {
    return this.call("memory.ask", { question, ...fields });
  }
}

export class Memory {
  constructor(private readonly a: Agent) {}
  set(key: string, value: string, ...[fields]: Rest<"memory.set", "key" | "value">) {
    return this.a.call("memory.set", { key, value, ...fields });
  }
  bulkSet(
    entries: OpInput<"memory.bulk_set">["entries"],
    ...[fields]: Rest<"memory.bulk_set", "entries">
  ) {
    return this.a.call("memory.bulk_set", { entries, ...fields });
  }
  get(key: string, ...[fields]: Rest<"memory.get", "key">) {
    return this.a.call("memory.get", { key, ...fields });
  }
  search(query: string, ...[fields]: Rest<"memory.search", "query">) {
    return this.a.call("memory.search", { query, ...fields });
  }
  /** The scope's memories without a query: pinned first, then by confidence and recency. */
  stack(...[fields]: Args<OpFields<"memory.stack">>) {
    return this.a.call("memory.stack", { ...fields });
  }
  /** memory.apply (admin): demote, label or restore memories by key. */
  apply(actions: OpInput<"memory.apply">["actions"], ...[fields]: Rest<"memory.apply", "actions">) {
    return this.a.call("memory.apply", { actions, ...fields });
  }
  delete(key: string, ...[fields]: Rest<"memory.delete", "key">) {
    return this.a.call("memory.delete", { key, ...fields });
  }
  evidence(key: string, ...[fields]: Rest<"memory.evidence", "key">) {
    return this.a.call("memory.evidence", { key, ...fields });
  }
  recall(query = "", ...[fields]: Rest<"memory.recall", "query">) {
    return this.a.call("memory.recall", { query, ...fields });
  }
  /** Extract durable facts from a transcript (`defer: true` queues it). */
  setFromMessages(
    messages: OpInput<"memory.set_from_messages">["messages"],
    ...[fields]: Rest<"memory.set_from_messages", "messages">
  ) {
    return this.a.call("memory.set_from_messages", { messages, ...fields });
  }
  extractionStatusMine(queueIds: string[]) {
    return this.a.call("memory.extraction_status_mine", { queue_ids: queueIds });
  }
}

export class Conversations {
  constructor(private readonly a: Agent) {}
  setLogging(enabled: boolean) {
    return this.a.call("conversation.set_logging", { enabled });
  }
  append(
    threadId: string,
    role: OpInput<"conversation.append">["role"],
    content: string,
    ...[fields]: Rest<"conversation.append", "thread_id" | "role" | "content">
  ) {
    return this.a.call("conversation.append", { thread_id: threadId, role, content, ...fields });
  }
  get(threadId: string, ...[fields]: Rest<"conversation.get", "thread_id">) {
    return this.a.call("conversation.get", { thread_id: threadId, ...fields });
  }
  list(threadId: string, ...[fields]: Rest<"conversation.list", "thread_id">) {
    return this.a.call("conversation.list", { thread_id: threadId, ...fields });
  }
  threads(...[fields]: Args<OpFields<"conversation.threads">>) {
    return this.a.call("conversation.threads", { ...fields });
  }
  search(query: string, ...[fields]: Rest<"conversation.search", "query">) {
    return this.a.call("conversation.search", { query, ...fields });
  }
}

/** The namespace's documents: published, read, searched and deleted by uri. */
export class Knowledge {
  constructor(private readonly a: Agent) {}
  publish(uri: string, text: string, ...[fields]: Rest<"knowledge.publish", "uri" | "text">) {
    return this.a.call("knowledge.publish", { uri, text, ...fields });
  }
  get(uri: string, ...[fields]: Rest<"knowledge.get", "uri">) {
    return this.a.call("knowledge.get", { uri, ...fields });
  }
  list(...[fields]: Args<OpFields<"knowledge.list">>) {
    return this.a.call("knowledge.list", { ...fields });
  }
  search(query: string, ...[fields]: Rest<"knowledge.search", "query">) {
    return this.a.call("knowledge.search", { query, ...fields });
  }
  delete(uri: string, ...[fields]: Rest<"knowledge.delete", "uri">) {
    return this.a.call("knowledge.delete", { uri, ...fields });
  }
}

export class Briefs {
  constructor(private readonly a: Agent) {}
  save(...[fields]: Args<OpFields<"session.brief_save">>) {
    return this.a.call("session.brief_save", { ...fields });
  }
  get(...[fields]: Args<OpFields<"session.brief_get">>) {
    return this.a.call("session.brief_get", { ...fields });
  }
  list(...[fields]: Args<OpFields<"session.brief_list">>) {
    return this.a.call("session.brief_list", { ...fields });
  }
  delete(briefKey: string, ...[fields]: Rest<"session.brief_delete", "brief_key">) {
    return this.a.call("session.brief_delete", { brief_key: briefKey, ...fields });
  }
}

/** A turn of a session: its role and content, with the fields a turn may carry. */
export type Turn = Pick<OpInput<"conversation.append">, "role" | "content"> &
  Partial<
    Pick<OpInput<"conversation.append">, "msg_id" | "reasoning" | "metadata" | "tokens" | "run_id">
  >;
type ExtractionMessage = OpInput<"memory.set_from_messages">["messages"][number];

const TURN_FIELDS = ["msg_id", "reasoning", "metadata", "tokens", "run_id"] as const;
/** What one memory.set_from_messages call takes: turns, and characters a turn. */
export const EXTRACTION_MESSAGES_MAX = 400;
export const EXTRACTION_MESSAGE_CHARS = 200_000;

/** One (user, thread): turns go to the transcript and, every `flushEvery`, to extraction;
 * `close()` flushes the rest; `resume()` reads back where things stand. */
export class Session {
  /** false when the namespace does not record, as the latest append found. */
  transcriptStored: boolean | null = null;
  /** The extraction batches this session queued (memory.extraction_status_mine takes them). */
  readonly queueIds: string[] = [];
  readonly flushEvery: number;
  private readonly buffer: ExtractionMessage[] = []; // kept until extraction takes them
  private flushing: Promise<unknown> = Promise.resolve(); // one flush at a time

  constructor(
    private readonly a: Agent,
    readonly threadId: string,
    readonly userId: string,
    flushEvery: number,
  ) {
    this.flushEvery = Math.max(1, flushEvery);
  }

  /** Each turn's role and content, with its msg_id, reasoning, metadata, tokens and run_id
   * when it carries them (without a msg_id, a turn repeating an earlier one's role and text
   * would be answered duplicate). */
  async append(...turns: Turn[]): Promise<OpResult<"conversation.append">[]> {
    const out = [];
    for (const turn of turns) {
      const extra: Partial<Turn> = {};
      for (const f of TURN_FIELDS) if (turn[f] != null) Object.assign(extra, { [f]: turn[f] });
      const result = await this.a.conversations.append(this.threadId, turn.role, turn.content, {
        user_id: this.userId,
        ...extra,
      });
      // Whether the namespace records, as the latest answer says (a duplicate was stored).
      this.transcriptStored = result.reason !== "logging_disabled";
      // A turn the transcript holds whole goes to extraction as far as a message holds.
      this.buffer.push({
        role: turn.role,
        content: turn.content.slice(0, EXTRACTION_MESSAGE_CHARS),
      });
      out.push(result);
      if (this.buffer.length >= this.flushEvery) await this.flushAtLeast(this.flushEvery);
    }
    return out;
  }

  /** Hand the buffered turns to extraction (deferred: the hot path does not wait). When the
   * call fails the turns stay buffered and the next flush or `close()` sends them again. */
  flush(): Promise<void> {
    return this.flushAtLeast(1);
  }

  private flushAtLeast(atLeast: number): Promise<void> {
    const run = this.flushing.then(async () => {
      if (this.buffer.length < atLeast) return; // a flush that ran meanwhile took them
      let left = this.buffer.length; // turns appended meanwhile wait for the next flush
      while (left) {
        const turns = this.buffer.slice(0, Math.min(left, EXTRACTION_MESSAGES_MAX));
        const out = await this.a.memory.setFromMessages(turns, {
          user_id: this.userId,
          session_id: this.threadId,
          defer: true,
        });
        this.buffer.splice(0, turns.length);
        left -= turns.length;
        if (out.queue_id) this.queueIds.push(out.queue_id);
      }
    });
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Where things stand for this user and thread: context.pack for the session's scope
   * (`context.text` is ready for a prompt; `fields` go to it, e.g. `budget_tokens`), the
   * memories it packed, and the transcript's last `tail` turns, oldest first. */
  async resume(
    query = "",
    {
      tail = 20,
      ...fields
    }: Omit<OpFields<"context.pack">, "query" | "user_id"> & {
      tail?: number;
    } = {},
  ) {
    const context = await this.a.context(query, { user_id: this.userId, ...fields });
    const thread = await this.a.conversations.get(this.threadId, {
      agent: "-",
      include_messages: true,
      order: "desc",
      limit: tail,
    });
    const memories = context.sections.find((s) => s.name === "memories")?.items ?? [];
    return { context, memories, transcript: [...(thread.messages ?? [])].reverse() };
  }

  /** Flush what is buffered. */
  close(): Promise<void> {
    return this.flush();
  }
}

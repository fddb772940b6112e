// The dashboard's one way to the server: POST <base>/v1/<op> with JSON, as any client does.

export const BASE = new URL("../", import.meta.url);

let pending = 0;

const PAGES = ["app", "knowledge", "learnings"]; // each page's <main>

function busy(value) {
  for (const id of PAGES) document.getElementById(id)?.setAttribute("aria-busy", value);
}

/** Mark the page busy (aria-busy) while any request is in flight. */
async function tracked(work) {
  pending += 1;
  busy("true");
  try {
    return await work();
  } finally {
    pending -= 1;
    if (pending === 0) busy("false");
  }
}

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export class Api {
  constructor(token = null) {
    this.token = token;
  }

  call(op, body = {}) {
    return tracked(() => this.send(op, body));
  }

  async send(op, body) {
    const headers = { "Content-Type": "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let resp;
    try {
      resp = await fetch(new URL(`v1/${op}`, BASE), {
        method: "POST",
        headers,
        body: JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (err) {
      throw new ApiError(0, "network", `The server did not answer (${err.message}).`);
    }
    let data = null;
    try {
      data = await resp.json();
    } catch {
      data = null;
    }
    if (resp.status === 401) {
      // The token is missing or no longer valid: the page forgets it and asks for one.
      document.dispatchEvent(new CustomEvent("loom:unauthorized", { detail: { api: this } }));
    }
    if (!resp.ok) {
      const error = (data && data.error) || {};
      throw new ApiError(resp.status, error.code || "http", error.message || `HTTP ${resp.status}`);
    }
    if (data === null || typeof data !== "object") {
      throw new ApiError(resp.status, "bad_answer", "The server's answer was not JSON.");
    }
    return data;
  }
}

let published = null;

/** The ops this server publishes in its OpenAPI document (read once; empty when unreadable). */
export async function publishedOps() {
  if (!published) {
    published = tracked(() =>
      fetch(new URL("openapi.json", BASE), { credentials: "omit" })
        .then((resp) => (resp.ok ? resp.json() : { paths: {} }))
        .then((doc) => Object.keys(doc.paths || {}).map((path) => path.replace(/^\/v1\//, "")))
        .then((names) => new Set(names))
        .catch(() => new Set()),
    );
  }
  return published;
}

export function describe(err) {
  if (err instanceof ApiError) {
    if (err.status === 401) return "Not signed in, or the token is no longer valid.";
    if (err.status === 403) return `Not allowed: ${err.message}`;
    return err.status ? `${err.message} (${err.status})` : err.message;
  }
  return String(err && err.message ? err.message : err);
}

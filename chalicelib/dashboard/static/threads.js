// The threads list (conversation.threads, newest first, paged) and conversation.search.
// Titles and excerpts are shown exactly as the server sends them: an empty one stays empty.

import { describe } from "./api.js";
import { $, el, plural, searchBox, setError, when } from "./dom.js";
import { on, scope, signal, state } from "./state.js";

const PAGE = 20;
const MAX_LIMIT = 200; // conversation.threads' largest limit
let offset = 0; // threads the server has listed so far, in its order
let generation = 0;
let loading = false; // a load is in flight
let current = null; // the open thread's [namespace, id], to mark it in the list

function threadItem(t) {
  const titled = Boolean(t.title);
  const excerpt = t.last_excerpt
    ? el("span", { class: "excerpt", text: t.last_excerpt })
    : el("span", { class: "excerpt hidden-text", text: "No excerpt shown" });
  const button = el(
    "button",
    {
      type: "button",
      class: "item",
      "data-thread": t.thread_id,
      "aria-current": current && current[1] === t.thread_id ? "true" : null,
      onclick: () => signal("open-thread", { namespace: state.namespace, threadId: t.thread_id }),
    },
    el("span", { class: titled ? "title" : "title untitled", text: titled ? t.title : "Untitled" }),
    el("span", {
      class: "meta",
      text: [plural(t.msg_count, "message"), when(t.last_ts), t.agent].filter(Boolean).join(" · "),
    }),
    excerpt,
    titled ? null : el("span", { class: "meta", text: `id ${t.thread_id}` }),
  );
  return el("li", {}, button);
}

/**
 * The first page (Refresh, a new window), or with `more` the next one. The list is offset
 * paged and threads reorder as they get new turns, so "more" asks again from the top for every
 * thread shown so far plus a page (one consistent answer, drawn afresh: nothing repeated or
 * skipped); past the op's limit it pages by offset and skips threads already listed.
 * A refresh supersedes any load in flight; "more" waits for the one in flight.
 */
export async function loadThreads({ more = false } = {}) {
  if (more && loading) return;
  const mine = ++generation;
  loading = true;
  setError("threads-error", "");
  const list = $("threads");
  const want = more ? offset + PAGE : PAGE;
  const fromTop = want <= MAX_LIMIT;
  try {
    const answer = await state.api.call("conversation.threads", {
      ...scope(),
      agent: "*",
      window_days: Number($("window-days").value),
      limit: fromTop ? want : PAGE,
      offset: fromTop ? 0 : offset,
    });
    if (mine !== generation) return;
    const rows = answer.threads || [];
    if (fromTop) {
      list.replaceChildren();
      state.titles.clear();
    }
    const listed = new Set([...list.querySelectorAll(".item")].map((b) => b.dataset.thread));
    const fresh = rows.filter((t) => !listed.has(t.thread_id));
    for (const t of fresh) state.titles.set(t.thread_id, t.title || "");
    list.append(...fresh.map(threadItem));
    offset = (fromTop ? 0 : offset) + rows.length;
    $("threads-more").hidden = rows.length < (fromTop ? want : PAGE);
    $("threads-empty").hidden = list.children.length > 0;
    signal("threads-loaded");
  } catch (err) {
    if (mine !== generation) return;
    if (!more) list.replaceChildren();
    $("threads-more").hidden = true;
    $("threads-empty").hidden = true;
    setError("threads-error", describe(err));
  } finally {
    if (mine === generation) loading = false;
  }
}

function hitItem(h) {
  return el(
    "li",
    {},
    el(
      "button",
      {
        type: "button",
        class: "item",
        "data-thread": h.thread_id,
        onclick: () =>
          signal("open-thread", { namespace: h.namespace, threadId: h.thread_id, msgId: h.msg_id }),
      },
      el("span", { class: "excerpt", text: h.excerpt }),
      el("span", {
        class: "meta",
        text: [
          h.role,
          h.namespace !== state.namespace ? `namespace ${h.namespace}` : null,
          `thread ${h.thread_id}`,
          when(h.ts),
        ]
          .filter(Boolean)
          .join(" · "),
      }),
    ),
  );
}

// Only the newest search's answer is drawn (a sign-out or a new one counts).
const searchForm = searchBox({
  query: "search-query",
  results: "search-results",
  wrap: "search-results-wrap",
  title: "search-results-title",
  error: "search-error",
  fetch: async (query) => {
    const answer = await state.api.call("conversation.search", {
      ...scope(),
      agent: "*",
      query,
      namespace_scope: $("search-all").checked ? "all_mine" : "this",
    });
    return answer.hits || [];
  },
  item: hitItem,
  none: "No matching turns.",
});

export function resetThreads() {
  generation++; // an answer still on its way is for the previous context: dropped
  loading = false;
  offset = 0;
  current = null;
  $("threads").replaceChildren();
  state.titles.clear();
  searchForm.clear();
  setError("search-error", "");
}

export function initThreads() {
  $("threads-refresh").addEventListener("click", () => loadThreads());
  $("threads-more").addEventListener("click", () => loadThreads({ more: true }));
  $("window-days").addEventListener("change", () => loadThreads());
  $("search-form").addEventListener("submit", searchForm.search);
  $("search-clear").addEventListener("click", searchForm.clear);
  on("thread-opened", ({ namespace, threadId }) => {
    current = [namespace, threadId];
    for (const item of $("threads").querySelectorAll(".item")) {
      const here = namespace === state.namespace && item.dataset.thread === threadId;
      item.setAttribute("aria-current", here ? "true" : "false");
    }
  });
}

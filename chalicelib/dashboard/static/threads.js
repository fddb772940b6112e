// The threads list (conversation.threads, newest first, paged) and conversation.search.
// Titles and excerpts are shown exactly as the server sends them: an empty one stays empty.

import { describe } from "./api.js";
import { $, el, plural, setError, when } from "./dom.js";
import { on, scope, signal, state } from "./state.js";

const PAGE = 20;
let offset = 0;
let generation = 0;
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

export async function loadThreads({ more = false } = {}) {
  const mine = ++generation;
  if (!more) offset = 0;
  setError("threads-error", "");
  const list = $("threads");
  try {
    const answer = await state.api.call("conversation.threads", {
      ...scope(),
      agent: "*",
      window_days: Number($("window-days").value),
      limit: PAGE,
      offset,
    });
    if (mine !== generation) return;
    const rows = answer.threads || [];
    if (!more) {
      list.replaceChildren();
      state.titles.clear();
    }
    for (const t of rows) state.titles.set(t.thread_id, t.title || "");
    list.append(...rows.map(threadItem));
    offset += rows.length;
    $("threads-more").hidden = rows.length < PAGE;
    $("threads-empty").hidden = list.children.length > 0;
    signal("threads-loaded");
  } catch (err) {
    if (mine !== generation) return;
    if (!more) list.replaceChildren();
    $("threads-more").hidden = true;
    $("threads-empty").hidden = true;
    setError("threads-error", describe(err));
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

async function search(event) {
  event.preventDefault();
  const query = $("search-query").value.trim();
  setError("search-error", "");
  if (!query) return clearSearch();
  const results = $("search-results");
  try {
    const answer = await state.api.call("conversation.search", {
      ...scope(),
      agent: "*",
      query,
      namespace_scope: $("search-all").checked ? "all_mine" : "this",
    });
    const hits = answer.hits || [];
    results.replaceChildren(...hits.map(hitItem));
    if (!hits.length) results.append(el("li", { class: "muted", text: "No matching turns." }));
    $("search-results-title").textContent = `Results for “${query}”`;
    $("search-results-wrap").hidden = false;
  } catch (err) {
    setError("search-error", describe(err));
  }
}

function clearSearch() {
  $("search-results").replaceChildren();
  $("search-results-wrap").hidden = true;
  $("search-query").value = "";
}

export function resetThreads() {
  current = null;
  clearSearch();
  setError("search-error", "");
}

export function initThreads() {
  $("threads-refresh").addEventListener("click", () => loadThreads());
  $("threads-more").addEventListener("click", () => loadThreads({ more: true }));
  $("window-days").addEventListener("change", () => loadThreads());
  $("search-form").addEventListener("submit", search);
  $("search-clear").addEventListener("click", clearSearch);
  on("thread-opened", ({ namespace, threadId }) => {
    current = [namespace, threadId];
    for (const item of $("threads").querySelectorAll(".item")) {
      const here = namespace === state.namespace && item.dataset.thread === threadId;
      item.setAttribute("aria-current", here ? "true" : "false");
    }
  });
}

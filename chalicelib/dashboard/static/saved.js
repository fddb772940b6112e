// The Saved panel: the user's saved messages (conversation.list_saved_messages), narrowed by
// conversation.search_saved_messages once something is typed.

import { describe } from "./api.js";
import { $, announce, el, setError, when } from "./dom.js";
import { AGENT, on, scope, signal, state } from "./state.js";

const PAGE = 20;
let cursor = null; // the server's cursor for the next page
let generation = 0;
let loading = false; // a load is in flight
let typing = null;

function savedItem(row, key) {
  const namespace = state.namespace;
  const open = el(
    "button",
    {
      type: "button",
      class: "item",
      "data-msg": row.message_id,
      onclick: () =>
        signal("open-thread", { namespace, threadId: row.conversation_id, msgId: row.message_id }),
    },
    row.excerpt
      ? el("span", { class: "excerpt", text: row.excerpt })
      : el("span", { class: "excerpt hidden-text", text: "No excerpt shown" }),
    el("span", {
      class: "meta",
      text: `${row.role} · thread ${row.conversation_id} · saved ${when(row.saved_at || row.ts)}`,
    }),
  );
  const unsave = el("button", {
    type: "button",
    "aria-label": `Unsave this ${row.role} message from thread ${row.conversation_id}`,
    text: "Unsave",
    onclick: async () => {
      unsave.disabled = true;
      try {
        await state.api.call("conversation.unsave_message", {
          ...scope(namespace),
          agent: AGENT,
          conversation_id: row.conversation_id,
          message_id: row.message_id,
          user_id: state.user,
        });
        announce("Message unsaved.");
        signal("unsaved", {
          namespace,
          conversationId: row.conversation_id,
          messageId: row.message_id,
        });
        loadSaved();
      } catch (err) {
        unsave.disabled = false;
        announce(describe(err));
      }
    },
  });
  return el("li", { class: "saved-row", "data-key": key }, open, unsave);
}

/** The first page, or with `more` the next one by the server's cursor. A reload supersedes
 * any load in flight; "more" waits for the one in flight. */
export async function loadSaved({ more = false } = {}) {
  if (more && loading) return;
  const mine = ++generation;
  const list = $("saved");
  setError("saved-error", "");
  if (!state.user) {
    list.replaceChildren();
    $("saved-more").hidden = true;
    $("saved-empty").hidden = true;
    setError("saved-error", "Enter your user id above to see the messages you saved.");
    return;
  }
  const query = $("saved-query").value.trim();
  loading = true;
  try {
    let rows;
    let next = null;
    if (query) {
      const answer = await state.api.call("conversation.search_saved_messages", {
        ...scope(),
        agent: AGENT,
        user_id: state.user,
        query,
      });
      rows = answer.hits || [];
    } else {
      const answer = await state.api.call("conversation.list_saved_messages", {
        ...scope(),
        agent: AGENT,
        user_id: state.user,
        limit: PAGE,
        cursor: more ? cursor : null,
      });
      rows = answer.rows || [];
      next = answer.next_cursor || null;
    }
    if (mine !== generation) return;
    if (!more) list.replaceChildren();
    const key = (r) => `${r.conversation_id}\u0000${r.message_id}`;
    const listed = new Set([...list.children].map((li) => li.dataset.key));
    const fresh = rows.filter((r) => !listed.has(key(r)));
    list.append(...fresh.map((r) => savedItem(r, key(r))));
    cursor = next;
    $("saved-more").hidden = !next;
    $("saved-empty").textContent = query ? "No saved message matches." : "Nothing saved yet.";
    $("saved-empty").hidden = list.children.length > 0;
  } catch (err) {
    if (mine !== generation) return;
    list.replaceChildren();
    $("saved-more").hidden = true;
    $("saved-empty").hidden = true;
    setError("saved-error", describe(err));
  } finally {
    if (mine === generation) loading = false;
  }
}

export function resetSaved() {
  generation++; // an answer still on its way is for the previous context: dropped
  loading = false;
  cursor = null;
  $("saved").replaceChildren();
  $("saved-query").value = "";
}

export function initSaved() {
  $("saved-query").addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => loadSaved(), 250);
  });
  $("saved-more").addEventListener("click", () => loadSaved({ more: true }));
  on("saved-changed", ({ namespace }) => {
    if (namespace === state.namespace) loadSaved();
  });
}

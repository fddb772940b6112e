// One thread: its turns newest page first (conversation.get), roles drawn apart, reasoning
// folded, compaction summaries marked, and a Save toggle per message whose state comes from
// one conversation.saved_status call per page.

import { describe } from "./api.js";
import { $, announce, el, fullTime, plural, setError } from "./dom.js";
import { AGENT, on, scope, signal, state } from "./state.js";

const PAGE = 50;
const ROLE_NAMES = { user: "User", assistant: "Assistant", system: "System", tool: "Tool" };
const SAVE_REFUSALS = {
  owner_mismatch: "This message belongs to another user.",
  deleted: "This message was deleted.",
  unsupported_role: "Only user and assistant messages can be saved.",
  high_sensitivity: "This message holds sensitive text and cannot be saved for search.",
};

let open = null; // { namespace, threadId, offset, total, generation, loading }
let generation = 0;

// A compaction summary as the server knows one: a system turn under a summary id whose
// metadata lists the msg_ids it replaced (a client's metadata alone makes no turn one).
function compactedFrom(message) {
  const from = message.metadata && message.metadata.compacted_from;
  const listed = Array.isArray(from) && from.every((id) => typeof id === "string");
  return message.role === "system" && message.msg_id.startsWith("summary-") && listed
    ? from
    : null;
}

function saveButton(message) {
  if (message.role !== "user" && message.role !== "assistant") return null;
  const button = el("button", {
    type: "button",
    class: "save",
    "aria-pressed": "false",
    "aria-label": `Save this ${message.role} message`,
    "data-msg": message.msg_id,
    disabled: !state.user,
    title: state.user ? null : "Enter your user id above to save messages",
    text: "Save",
  });
  button.addEventListener("click", () => toggleSaved(button, message));
  return button;
}

function messageItem(message) {
  const summary = compactedFrom(message);
  const classes = ["msg", `role-${message.role}`];
  if (summary) classes.push("summary");
  const header = el(
    "header",
    {},
    el("span", { class: "role", text: ROLE_NAMES[message.role] || message.role }),
    summary
      ? el("span", {
          class: "badge",
          text: `Compaction summary · replaces ${plural(summary.length, "turn")}`,
        })
      : null,
    message.agent ? el("span", { text: message.agent }) : null,
    message.user_id && message.user_id !== "-"
      ? el("span", { text: `user ${message.user_id}` })
      : null,
    el("time", { datetime: message.ts, text: fullTime(message.ts) }),
    saveButton(message),
  );
  const reasoning = message.reasoning
    ? el(
        "details",
        {},
        el("summary", { text: "Reasoning" }),
        el("pre", { text: message.reasoning }),
      )
    : null;
  return el(
    "li",
    { class: classes.join(" "), "data-msg": message.msg_id, "data-role": message.role },
    header,
    el("div", { class: "content", text: message.content }),
    reasoning,
  );
}

function drawSaved(ids, saved) {
  for (const button of $("messages").querySelectorAll("button.save")) {
    if (!ids.includes(button.dataset.msg)) continue;
    markSaved(button, saved.has(button.dataset.msg));
  }
}

function markSaved(button, saved) {
  button.setAttribute("aria-pressed", saved ? "true" : "false");
  button.textContent = saved ? "Saved" : "Save"; // the label stays; aria-pressed says which
}

async function loadSavedState(view, messages) {
  const ids = messages
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => m.msg_id);
  if (!ids.length || !state.user) return;
  try {
    const answer = await state.api.call("conversation.saved_status", {
      ...scope(view.namespace),
      agent: AGENT,
      user_id: state.user,
      conversation_id: view.threadId,
      message_ids: ids,
    });
    if (view.generation !== generation) return;
    drawSaved(ids, new Set(answer.saved || []));
  } catch (err) {
    if (view.generation !== generation) return; // an error for a thread no longer shown
    setError("thread-error", `Saved state unavailable: ${describe(err)}`);
  }
}

/** One page of older turns (offset paging, newest first). A turn already on screen is not
 * drawn again: turns appended since the last page shift the offsets, so a page can overlap. */
async function loadPage(view) {
  const answer = await state.api.call("conversation.get", {
    ...scope(view.namespace),
    agent: "",
    thread_id: view.threadId,
    include_messages: true,
    limit: PAGE,
    offset: view.offset,
    order: "desc",
  });
  if (view.generation !== generation) return null;
  const rows = answer.messages || [];
  const list = $("messages");
  const shown = new Set([...list.children].map((li) => li.dataset.msg));
  const messages = rows.filter((m) => !shown.has(m.msg_id)).reverse(); // oldest first on screen
  view.offset += rows.length;
  view.total = answer.msg_count;
  list.prepend(...messages.map(messageItem));
  $("thread-earlier").hidden = !rows.length || view.offset >= view.total;
  await loadSavedState(view, messages);
  return { answer, added: messages.length };
}

export async function openThread({ namespace, threadId, msgId = null, focus = true }) {
  const view = { namespace, threadId, offset: 0, total: 0, generation: ++generation };
  open = view;
  setError("thread-error", "");
  $("messages").replaceChildren();
  $("thread-earlier").hidden = true;
  // The title is the one the threads list showed (the server blanks one that reads as high).
  const title = namespace === state.namespace ? state.titles.get(threadId) : "";
  $("thread-title").textContent = title || `Thread ${threadId}`;
  $("thread-meta").textContent = "Loading…";
  signal("thread-opened", { namespace, threadId });
  if (focus) $("thread").focus();
  try {
    const page = await loadPage(view);
    if (!page) return;
    const { answer } = page;
    if (answer.title) $("thread-title").textContent = answer.title;
    const where = namespace !== state.namespace ? ` · namespace ${namespace}` : "";
    $("thread-meta").textContent = answer.found
      ? `${plural(answer.msg_count, "message")} · id ${threadId}${where}`
      : `No live messages in thread ${threadId}${where}.`;
    if (msgId) await reveal(view, msgId);
  } catch (err) {
    if (view.generation !== generation) return;
    $("thread-meta").textContent = "";
    setError("thread-error", describe(err));
  }
}

const REVEAL_PAGES = 40; // how far back (pages of PAGE turns) opening a hit goes looking

/** Bring a turn on screen: older pages are loaded until it is there (a search hit or saved
 * message can be far back in a long thread), then it is scrolled to. */
async function reveal(view, msgId) {
  const find = () => $("messages").querySelector(`li[data-msg="${CSS.escape(msgId)}"]`);
  for (let pages = 0; !find() && !$("thread-earlier").hidden && pages < REVEAL_PAGES; pages++) {
    if (!(await loadPage(view))) return; // another thread was opened meanwhile
  }
  const target = find();
  if (target) {
    target.scrollIntoView({ block: "center" });
  } else if (view.generation === generation) {
    announce("That message is not among the turns shown: deleted, or further back.");
  }
}

async function earlier() {
  const view = open;
  if (!view || view.loading) return; // a second press while a page is on its way does nothing
  view.loading = true;
  try {
    // A page holding only turns already shown (many were appended meanwhile): ask for the next.
    for (let tries = 0; tries < 5; tries++) {
      const page = await loadPage(view);
      if (!page || page.added || $("thread-earlier").hidden) break;
    }
  } catch (err) {
    if (view.generation === generation) setError("thread-error", describe(err));
  } finally {
    view.loading = false;
  }
}

async function toggleSaved(button, message) {
  if (!open || !state.user) return;
  const view = open;
  const saved = button.getAttribute("aria-pressed") === "true";
  const ids = { conversation_id: view.threadId, message_id: message.msg_id, user_id: state.user };
  button.disabled = true;
  try {
    if (saved) {
      const answer = await state.api.call("conversation.unsave_message", {
        ...scope(view.namespace),
        agent: AGENT,
        ...ids,
      });
      markSaved(button, false);
      announce(
        answer.removed
          ? "Unsaved; this namespace does not record, so the message left the transcript."
          : "Message unsaved.",
      );
    } else {
      const answer = await state.api.call("conversation.save_message", {
        ...scope(view.namespace),
        agent: AGENT,
        ...ids,
        role: message.role,
        content: message.content,
      });
      const stored = answer.indexed || ["", "duplicate", "embed_failed"].includes(answer.reason);
      markSaved(button, stored);
      announce(
        stored
          ? answer.reason === "embed_failed"
            ? "Saved; it will be searchable once it is indexed (save again to retry)."
            : "Message saved."
          : SAVE_REFUSALS[answer.reason] || `Not saved (${answer.reason}).`,
      );
    }
    signal("saved-changed", { namespace: view.namespace });
  } catch (err) {
    announce(describe(err));
  } finally {
    button.disabled = !state.user;
  }
}

export function closeThread() {
  open = null;
  generation++;
  $("messages").replaceChildren();
  $("thread-earlier").hidden = true;
  $("thread-title").textContent = "No thread open";
  $("thread-meta").textContent = "Pick a thread from the list, or a search hit.";
  setError("thread-error", "");
}

export function initThread() {
  $("thread-earlier").addEventListener("click", earlier);
  on("open-thread", (detail) => openThread(detail));
  on("threads-loaded", () => {
    const title = open && open.namespace === state.namespace && state.titles.get(open.threadId);
    if (title) $("thread-title").textContent = title;
  });
  on("unsaved", ({ namespace, conversationId, messageId }) => {
    if (!open || open.namespace !== namespace || open.threadId !== conversationId) return;
    const button = $("messages").querySelector(`button.save[data-msg="${CSS.escape(messageId)}"]`);
    if (button) markSaved(button, false);
  });
}

// The Learnings page: the rules bots stated about themselves, waiting in the namespace's review
// queue (learnings.list, newest first, paged by the server's cursor, filtered by status), each
// with its agent, key, support and the users' quotes, promoted to knowledge or memory or
// rejected with an optional note (learnings.review). Every text the server gives goes in as text.

import { describe } from "./api.js";
import { $, cursorList, el, plural, setError, when } from "./dom.js";
import { scope, state } from "./state.js";

const PAGE = 20;
const EMPTY = {
  pending: "No rules wait for review in this namespace.",
  promoted: "No promoted rules in this namespace.",
  rejected: "No rejected rules in this namespace.",
  "": "No rules in this namespace's queue.",
};

let drawn = 0; // numbers each drawn candidate's controls, so every label names its own field
let context = 0; // a review answered after the page moved on is not drawn

function shownStatus() {
  return $("learnings-status").value;
}

function quote(label, text, cls) {
  return [
    el("dt", { text: label }),
    text
      ? el("dd", { class: `quote ${cls}`, text })
      : el("dd", { class: `quote ${cls} hidden-text`, text: "Withheld: it reads as sensitive." }),
  ];
}

function rationale(r) {
  if (!r) return el("p", { class: "muted small", text: "No supporter left to quote." });
  return el(
    "dl",
    { class: "rationale" },
    ...quote("The user said", r.user_quote, "user-quote"),
    ...quote("The bot said", r.rule_quote, "rule-quote"),
  );
}

function decision(c) {
  if (c.status === "pending") return null;
  const parts = [
    c.status,
    c.destination && `to ${c.destination}`,
    c.decided_by && `by ${c.decided_by}`,
    when(c.decided_at),
  ];
  if (c.status === "promoted" && c.destination === "knowledge") {
    parts.push(`learning://${c.candidate_id}`);
  }
  return el(
    "div",
    { class: "decision" },
    el("p", { class: "meta", text: parts.filter(Boolean).join(" · ") }),
    c.note ? el("p", { class: "note", text: `Note: ${c.note}` }) : null,
  );
}

/** Promote (to knowledge or memory) and Reject, with an optional note. A promoted rule is not
 * rejected here: its document stays served until deleted on the Knowledge page. */
function reviewControls(c, n, textId) {
  const dest = `candidate-${n}-destination`;
  const note = `candidate-${n}-note`;
  const button = (value, text, cls) =>
    el("button", {
      type: "button",
      class: cls,
      "data-decision": value,
      "aria-describedby": textId,
      text,
      onclick: (event) => review(c, event.currentTarget.closest("li"), value),
    });
  return el(
    "div",
    { class: "review" },
    el(
      "div",
      { class: "inline wrap" },
      el("label", { for: dest, text: "Promote to" }),
      el(
        "select",
        { id: dest, class: "destination" },
        el("option", { value: "knowledge", text: "Knowledge (learning://)" }),
        el("option", { value: "memory", text: "The bot's memory" }),
      ),
      el("label", { for: note, text: "Note (optional)" }),
      el("input", { id: note, class: "note-input", autocomplete: "off", maxlength: 2000 }),
    ),
    el(
      "div",
      { class: "inline" },
      button("promote", c.status === "promoted" ? "Promote again" : "Promote", "promote"),
      c.status === "promoted" ? null : button("reject", "Reject", "danger reject"),
    ),
    el("p", { class: "error", role: "alert" }),
  );
}

function candidateItem(c) {
  const n = ++drawn;
  const textId = `candidate-${n}-text`;
  return el(
    "li",
    { class: "candidate" },
    c.text
      ? el("p", { class: "rule", id: textId, text: c.text })
      : el("p", {
          class: "rule hidden-text",
          id: textId,
          text: "No rule left: its last supporter was erased.",
        }),
    el("p", {
      class: "meta",
      text: [
        `agent ${c.agent}`,
        `key ${c.key}`,
        plural(c.support, "supporter"),
        c.status,
        `filed ${when(c.created_at)}`,
      ].join(" · "),
    }),
    rationale(c.rationale),
    decision(c),
    reviewControls(c, n, textId),
  );
}

const candidates = cursorList({
  list: "candidates",
  more: "learnings-more",
  empty: "learnings-empty",
  error: "learnings-error",
  key: (c) => c.candidate_id,
  item: candidateItem,
  fetch: async (from) => {
    const body = { ...scope(), status: shownStatus() || null, limit: PAGE, cursor: from };
    const answer = await state.api.call("learnings.list", body);
    return { rows: answer.candidates || [], next: answer.next_cursor };
  },
});

/** The first page of the shown status (Refresh, a new context, a new filter), or with `more`
 * the next one by the server's cursor (dom.js cursorList). */
export function loadLearnings({ more = false } = {}) {
  $("learnings-empty").textContent = EMPTY[shownStatus()];
  return candidates.load({ more });
}

function outcome(c, answer) {
  if (answer.status === "rejected") return `Rejected ${c.key} (version ${answer.version}).`;
  const where =
    answer.destination === "memory"
      ? `to the bot's memory under ${answer.key}`
      : `to knowledge as ${answer.uri}`;
  return `Promoted ${c.key} ${where} (version ${answer.version}).`;
}

/** A candidate decided away from the shown status leaves the list; focus moves to the next
 * one's first button, else the list's heading. */
function leave(li) {
  const next = li.nextElementSibling || li.previousElementSibling;
  li.remove();
  $("learnings-empty").hidden = $("candidates").children.length > 0;
  (next?.querySelector("button") || $("learnings-title")).focus();
}

async function review(c, li, decision) {
  const mine = context;
  const error = li.querySelector(".review .error");
  const buttons = li.querySelectorAll(".review button");
  error.textContent = "";
  $("learnings-result").textContent = "";
  const body = {
    ...scope(),
    candidate_id: c.candidate_id,
    decision,
    note: li.querySelector(".note-input").value.trim(),
  };
  if (decision === "promote") body.destination = li.querySelector(".destination").value;
  for (const b of buttons) b.disabled = true;
  try {
    const answer = await state.api.call("learnings.review", body);
    if (mine !== context) return;
    if (!answer.found) {
      $("learnings-result").textContent = `${c.key} is no longer in the queue.`;
      leave(li);
      return;
    }
    $("learnings-result").textContent = outcome(c, answer);
    if (shownStatus() && shownStatus() !== answer.status) leave(li);
    else await loadLearnings();
  } catch (err) {
    if (mine !== context) return;
    error.textContent = `Not reviewed: ${describe(err)}`;
  } finally {
    for (const b of buttons) b.disabled = false;
  }
}

export function resetLearnings() {
  context++;
  candidates.reset(); // an answer still on its way is for the previous context: dropped
  setError("learnings-result", "");
}

export function initLearnings() {
  $("learnings-refresh").addEventListener("click", () => loadLearnings());
  $("learnings-more").addEventListener("click", () => loadLearnings({ more: true }));
  $("learnings-status").addEventListener("change", () => {
    $("learnings-result").textContent = "";
    loadLearnings();
  });
}

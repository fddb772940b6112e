// Session briefs: the namespace's list (session.brief_list), one opened only on request
// (session.brief_get, revisions browsable, full toggle), deleted after a confirmation.

import { describe } from "./api.js";
import { $, announce, el, fullTime, setError, when } from "./dom.js";
import { AGENT, scope, state } from "./state.js";

let opened = null; // { key, namespace }
let generation = 0;

function briefItem(b) {
  const where = b.project && b.branch ? `${b.project}/${b.branch}` : b.project;
  const line = [`rev ${b.revision}`, when(b.updated_at), b.agent, where]
    .filter(Boolean)
    .join(" · ");
  return el(
    "li",
    {},
    el(
      "button",
      {
        type: "button",
        class: "item",
        "data-brief": b.brief_key,
        "aria-label": `Open brief ${b.brief_key}`,
        onclick: () => openBrief(b.brief_key),
      },
      el("span", { class: "title", text: b.brief_key }),
      el("span", { class: "meta", text: line }),
      b.goal ? el("span", { class: "excerpt", text: b.goal }) : null,
    ),
  );
}

const LIST_LIMIT = 50; // the most session.brief_list answers at once

export async function loadBriefs() {
  const mine = ++generation;
  setError("briefs-error", "");
  const list = $("briefs");
  const project = $("briefs-project").value.trim();
  try {
    const answer = await state.api.call("session.brief_list", {
      ...scope(),
      agent: AGENT,
      limit: LIST_LIMIT,
      ...(project ? { project } : {}),
    });
    if (mine !== generation) return;
    const rows = answer.briefs || [];
    list.replaceChildren(...rows.map(briefItem));
    $("briefs-empty").textContent = project
      ? `No briefs of project ${project} in this namespace.`
      : "No briefs in this namespace.";
    $("briefs-empty").hidden = rows.length > 0;
    // A full page may not be all of them: say so, and how to reach the others.
    $("briefs-capped").hidden = rows.length < LIST_LIMIT;
  } catch (err) {
    if (mine !== generation) return;
    list.replaceChildren();
    $("briefs-empty").hidden = true;
    $("briefs-capped").hidden = true;
    setError("briefs-error", describe(err));
  }
}

let latestFetch = 0; // only the newest answer is drawn: a slower, older one is dropped

async function fetchBrief(revision) {
  if (!opened) return;
  const view = opened;
  const ticket = ++latestFetch;
  setError("briefs-error", "");
  try {
    const answer = await state.api.call("session.brief_get", {
      ...scope(view.namespace),
      agent: AGENT,
      brief_key: view.key,
      revision,
      full: $("brief-full").checked,
    });
    if (opened !== view || ticket !== latestFetch) return;
    if (!answer.found) {
      leaveBrief(view.key);
      setError("briefs-error", answer.deleted ? "That brief was deleted." : "That brief is gone.");
      return;
    }
    $("brief-title").textContent = answer.brief_key;
    $("brief-meta").textContent = [
      answer.project && `project ${answer.project}`,
      answer.branch && `branch ${answer.branch}`,
      `revision ${answer.revision} of ${answer.revisions}`,
      answer.author && `by ${answer.author}`,
      answer.trigger && `on ${answer.trigger}`,
      answer.updated_at && `saved ${fullTime(answer.updated_at)}`,
    ]
      .filter(Boolean)
      .join(" · ");
    const select = $("brief-revision");
    const options = [];
    for (let n = answer.revisions; n >= 1; n--) {
      const text = n === answer.revisions ? `${n} (current)` : `${n}`;
      options.push(el("option", { value: n, selected: n === answer.revision, text }));
    }
    select.replaceChildren(...options);
    $("brief-text").textContent = answer.rendered;
    $("brief").hidden = false;
  } catch (err) {
    if (ticket === latestFetch) setError("briefs-error", describe(err));
  }
}

function openBrief(key) {
  opened = { key, namespace: state.namespace };
  $("brief-full").checked = false;
  fetchBrief(0).then(() => {
    if (opened && !$("brief").hidden) $("brief").focus();
  });
}

export function closeBrief() {
  opened = null;
  $("brief").hidden = true;
  $("brief-text").textContent = "";
}

/** Close the open brief and put focus back on its entry in the list, else the list's heading,
 * so a keyboard user is not sent back to the top of the page. */
function leaveBrief(key) {
  closeBrief();
  const entry = $("briefs").querySelector(`.item[data-brief="${CSS.escape(key)}"]`);
  (entry || $("briefs-title")).focus();
}

export function resetBriefs() {
  generation++; // an answer still on its way is for the previous context: dropped
  closeBrief();
  $("briefs").replaceChildren();
}

function askDelete() {
  if (!opened) return;
  $("confirm-text").textContent =
    `“${opened.key}” and every revision of it will be forgotten. This cannot be undone.`;
  $("confirm-delete").showModal();
}

async function confirmed() {
  const dialog = $("confirm-delete");
  if (dialog.returnValue !== "delete" || !opened) {
    $("brief-delete").focus();
    return;
  }
  const view = opened;
  try {
    const answer = await state.api.call("session.brief_delete", {
      ...scope(view.namespace),
      agent: AGENT,
      brief_key: view.key,
    });
    announce(answer.deleted ? `Brief ${view.key} deleted.` : `Brief ${view.key} was already gone.`);
    await loadBriefs();
    if (opened === view) leaveBrief(view.key);
  } catch (err) {
    setError("briefs-error", describe(err));
  }
}

export function initBriefs() {
  $("briefs-refresh").addEventListener("click", loadBriefs);
  $("briefs-filter").addEventListener("submit", (e) => {
    e.preventDefault();
    loadBriefs();
  });
  $("brief-revision").addEventListener("change", (e) => fetchBrief(Number(e.target.value)));
  $("brief-full").addEventListener("change", () => fetchBrief(Number($("brief-revision").value)));
  $("brief-close").addEventListener("click", () => opened && leaveBrief(opened.key));
  $("brief-delete").addEventListener("click", askDelete);
  $("confirm-delete").addEventListener("close", confirmed);
}

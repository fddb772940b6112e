// The Knowledge page: the namespace's documents (knowledge.list, newest first, paged by the
// server's cursor), knowledge.search, one document opened whole (knowledge.get), published
// from pasted text or a text file read in the browser (knowledge.publish), and deleted after a
// confirmation (knowledge.delete). Every text the server or a file gives goes in as text.

import { describe } from "./api.js";
import { $, announce, cursorList, el, fullTime, plural, searchBox, setError, when } from "./dom.js";
import { scope, signal, state } from "./state.js";

const PAGE = 20;
const FILE_CHARS_MAX = 1_000_000; // knowledge.publish's longest text
const FILE_BYTES_MAX = 4 * FILE_CHARS_MAX; // a file larger than this cannot fit: not read

let opened = null; // { uri, namespace, document }
let latestOpen = 0;
let fromFile = { uri: "", title: "" }; // the defaults a file filled in, replaced by the next

function tagList(tags, label) {
  if (!tags || !tags.length) return null;
  return el(
    "ul",
    { class: "tags", "aria-label": label },
    ...tags.map((t) => el("li", { text: t })),
  );
}

function docItem(d) {
  const titled = Boolean(d.title);
  return el(
    "li",
    {},
    el(
      "button",
      {
        type: "button",
        class: "item",
        "data-uri": d.uri,
        "aria-current": opened && opened.uri === d.uri ? "true" : null,
        onclick: () => openDocument(d.uri),
      },
      el("span", { class: titled ? "title" : "title untitled", text: titled ? d.title : "Untitled" }),
      el("span", { class: "meta uri", text: d.uri }),
      el("span", {
        class: "meta",
        text: [`version ${d.version}`, when(d.updated_at), plural(d.chars, "character")]
          .filter(Boolean)
          .join(" · "),
      }),
      tagList(d.tags, `Tags of ${d.uri}`),
    ),
  );
}

const documents = cursorList({
  list: "docs",
  more: "docs-more",
  empty: "docs-empty",
  error: "docs-error",
  key: (d) => d.uri,
  item: docItem,
  fetch: async (from) => {
    const body = { ...scope(), limit: PAGE, cursor: from };
    const answer = await state.api.call("knowledge.list", body);
    return { rows: answer.documents || [], next: answer.next_cursor };
  },
});

/** The first page (Refresh, a new context, after a write), or with `more` the next one by the
 * server's cursor (dom.js cursorList). */
export function loadDocuments({ more = false } = {}) {
  return documents.load({ more });
}

function hitItem(h) {
  return el(
    "li",
    {},
    el(
      "button",
      { type: "button", class: "item", "data-uri": h.uri, onclick: () => openDocument(h.uri) },
      el("span", { class: h.title ? "title" : "title untitled", text: h.title || "Untitled" }),
      el("span", { class: "meta uri", text: h.uri }),
      el("span", { class: "excerpt", text: h.excerpt }),
      tagList(h.tags, `Tags of ${h.uri}`),
    ),
  );
}

const searchForm = searchBox({
  query: "kn-search-query",
  results: "kn-results",
  wrap: "kn-results-wrap",
  title: "kn-results-title",
  error: "kn-search-error",
  fetch: async (query) => {
    const answer = await state.api.call("knowledge.search", { ...scope(), query });
    return answer.hits || [];
  },
  item: hitItem,
  none: "No matching documents.",
});

function markCurrent() {
  for (const item of $("docs").querySelectorAll(".item")) {
    item.setAttribute("aria-current", opened && item.dataset.uri === opened.uri ? "true" : "false");
  }
}

/** Open one document whole. `focus` moves focus to it (a click; not a reload of the URL). */
export async function openDocument(uri, { focus = true } = {}) {
  const view = { uri, namespace: state.namespace, document: null };
  opened = view;
  const ticket = ++latestOpen;
  setError("doc-error", "");
  $("doc-title").textContent = uri;
  $("doc-meta").textContent = "Loading…";
  $("doc-tags").replaceChildren();
  $("doc-text").textContent = "";
  $("doc-text").hidden = true;
  $("doc-actions").hidden = true;
  markCurrent();
  signal("document-opened", { uri });
  if (focus) $("doc").focus();
  try {
    const answer = await state.api.call("knowledge.get", { ...scope(view.namespace), uri });
    if (ticket !== latestOpen || opened !== view) return;
    if (!answer.found) {
      $("doc-meta").textContent = "";
      setError("doc-error", `No document at ${uri}: it was deleted, or never published.`);
      return;
    }
    const d = answer.document;
    view.document = d;
    $("doc-title").textContent = d.title || d.uri;
    $("doc-meta").textContent = [
      d.uri,
      `version ${d.version}`,
      d.author && `by ${d.author}`,
      `updated ${fullTime(d.updated_at)}`,
      `created ${fullTime(d.created_at)}`,
      plural(d.text.length, "character"),
    ]
      .filter(Boolean)
      .join(" · ");
    $("doc-tags").replaceChildren(...d.tags.map((t) => el("li", { text: t })));
    $("doc-text").textContent = d.text;
    $("doc-text").hidden = false;
    $("doc-actions").hidden = false;
  } catch (err) {
    if (ticket !== latestOpen || opened !== view) return;
    $("doc-meta").textContent = "";
    setError("doc-error", describe(err));
  }
}

export function closeDocument() {
  opened = null;
  latestOpen++;
  $("doc-title").textContent = "No document open";
  $("doc-meta").textContent = "Pick a document from the list, or a search hit.";
  $("doc-tags").replaceChildren();
  $("doc-text").textContent = "";
  $("doc-text").hidden = true;
  $("doc-actions").hidden = true;
  setError("doc-error", "");
  markCurrent();
  signal("document-opened", { uri: null });
}

/** Close the open document and put focus on its entry in the list, else the list's heading. */
function leaveDocument(uri) {
  closeDocument();
  const entry = $("docs").querySelector(`.item[data-uri="${CSS.escape(uri)}"]`);
  (entry || $("docs-title")).focus();
}

/** The open document in the publish form, compared and set against its version. */
function editDocument() {
  const d = opened && opened.document;
  if (!d) return;
  $("publish-uri").value = d.uri;
  $("publish-title-input").value = d.title;
  $("publish-tags").value = d.tags.join(", ");
  $("publish-text").value = d.text;
  $("publish-if-version").value = String(d.version);
  fromFile = { uri: "", title: "" };
  setError("publish-error", "");
  $("publish-result").textContent = "";
  $("publish-text").focus();
}

function parseTags(text) {
  return [
    ...new Set(
      text
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean),
    ),
  ];
}

async function publish(event) {
  event.preventDefault();
  setError("publish-error", "");
  $("publish-result").textContent = "";
  const uri = $("publish-uri").value.trim();
  const text = $("publish-text").value;
  if (!uri || !text) {
    setError("publish-error", "A document needs a uri and some text.");
    return;
  }
  const body = {
    ...scope(),
    uri,
    title: $("publish-title-input").value.trim(),
    text,
    tags: parseTags($("publish-tags").value),
  };
  const ifVersion = $("publish-if-version").value.trim();
  if (ifVersion !== "") body.if_version = Number(ifVersion);
  const button = $("publish-submit");
  button.disabled = true;
  const namespace = state.namespace;
  try {
    const answer = await state.api.call("knowledge.publish", body);
    const parts = [
      `version ${answer.version}`,
      plural(answer.chunks, "chunk"),
      `${answer.chunks_withheld} withheld`,
    ];
    $("publish-result").textContent = answer.changed
      ? `Published ${answer.uri}: ${parts.join(" · ")}.`
      : `Unchanged: ${answer.uri} already holds this text, title and tags (${parts.join(" · ")}).`;
    if (answer.changed) $("publish-if-version").value = String(answer.version);
    if (namespace !== state.namespace) return;
    await loadDocuments();
    openDocument(answer.uri, { focus: false });
  } catch (err) {
    setError("publish-error", `Not published: ${describe(err)}`);
  } finally {
    button.disabled = false;
  }
}

/** Read a text file in the browser into the form; its name is the uri and title by default. */
function readFile(file) {
  setError("publish-error", "");
  $("publish-result").textContent = "";
  if (!file) return;
  if (file.size > FILE_BYTES_MAX) {
    setError("publish-error", `${file.name} is too large: a document holds at most 1,000,000 characters.`);
    return;
  }
  const reader = new FileReader();
  reader.addEventListener("load", () => {
    const text = String(reader.result);
    const uri = `doc://${encodeURI(file.name)}`;
    // A field the user typed in is kept; one a previous file filled in is replaced.
    for (const [id, key, value] of [
      ["publish-uri", "uri", uri],
      ["publish-title-input", "title", file.name],
    ]) {
      const field = $(id);
      if (!field.value.trim() || field.value === fromFile[key]) field.value = value;
    }
    fromFile = { uri, title: file.name };
    $("publish-text").value = text;
    $("publish-if-version").value = "";
    $("publish-result").textContent =
      `Read ${file.name} (${plural(text.length, "character")}): check the fields, then Publish.`;
  });
  reader.addEventListener("error", () => {
    setError("publish-error", `Could not read ${file.name}.`);
  });
  reader.readAsText(file);
}

function askDelete() {
  if (!opened || !opened.document) return;
  $("doc-confirm-text").textContent =
    `“${opened.uri}” and its chunks will be removed from this namespace. This cannot be undone.`;
  const dialog = $("confirm-doc-delete");
  dialog.returnValue = ""; // closed without a button (Escape), it never reads as "delete"
  dialog.showModal();
}

async function confirmed() {
  const dialog = $("confirm-doc-delete");
  if (dialog.returnValue !== "delete" || !opened) {
    $("doc-delete").focus();
    return;
  }
  const view = opened;
  try {
    const answer = await state.api.call("knowledge.delete", {
      ...scope(view.namespace),
      uri: view.uri,
    });
    announce(answer.found ? `Deleted ${view.uri}.` : `${view.uri} was already gone.`);
    await loadDocuments();
    if (opened === view) leaveDocument(view.uri);
  } catch (err) {
    setError("doc-error", describe(err));
  }
}

export function resetKnowledge() {
  documents.reset(); // an answer still on its way is for the previous context: dropped
  searchForm.clear();
  setError("kn-search-error", "");
  opened = null;
  latestOpen++;
  closeDocument();
  $("publish-form").reset();
  fromFile = { uri: "", title: "" };
  setError("publish-error", "");
  $("publish-result").textContent = "";
}

export function initKnowledge() {
  $("docs-refresh").addEventListener("click", () => loadDocuments());
  $("docs-more").addEventListener("click", () => loadDocuments({ more: true }));
  $("kn-search-form").addEventListener("submit", searchForm.search);
  $("kn-search-clear").addEventListener("click", searchForm.clear);
  $("doc-close").addEventListener("click", () => opened && leaveDocument(opened.uri));
  $("doc-edit").addEventListener("click", editDocument);
  $("doc-delete").addEventListener("click", askDelete);
  $("confirm-doc-delete").addEventListener("close", confirmed);
  $("publish-form").addEventListener("submit", publish);
  $("publish-form").addEventListener("reset", () => {
    fromFile = { uri: "", title: "" };
    setError("publish-error", "");
    $("publish-result").textContent = "";
  });
  // The version compared belongs to the uri it was read for: another uri starts without one.
  $("publish-uri").addEventListener("input", () => {
    $("publish-if-version").value = "";
  });
  $("publish-file").addEventListener("change", (event) => {
    readFile(event.target.files[0]);
    event.target.value = ""; // the same file chosen again is read again
  });
  const zone = $("publish");
  zone.addEventListener("dragover", (event) => {
    if (![...(event.dataTransfer?.types || [])].includes("Files")) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    $("drop-zone").classList.add("over");
  });
  zone.addEventListener("dragleave", () => $("drop-zone").classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    const file = event.dataTransfer?.files?.[0];
    $("drop-zone").classList.remove("over");
    if (!file) return;
    event.preventDefault();
    readFile(file);
  });
}

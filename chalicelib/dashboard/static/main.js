// Start-up: find out who is calling (system.whoami), ask for a token when the server needs
// one, then open the Conversations, Knowledge or Learnings page for the chosen org, namespace
// and user.

import { Api, describe } from "./api.js";
import { initBriefs, closeBrief, loadBriefs, resetBriefs } from "./briefs.js";
import { $, el, setError } from "./dom.js";
import { initKnowledge, loadDocuments, openDocument, resetKnowledge } from "./knowledge.js";
import { initLearnings, loadLearnings, resetLearnings } from "./learnings.js";
import { initRecording, loadRecording } from "./recording.js";
import { initSaved, loadSaved, resetSaved } from "./saved.js";
import {
  forgetPerson,
  prefs,
  rememberNamespace,
  saveToken,
  savePrefs,
  state,
} from "./state.js";
import { closeThread, initThread, openThread } from "./thread.js";
import { initThreads, loadThreads, resetThreads } from "./threads.js";

const DEFAULT_NAMESPACE = "default";

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

const VIEWS = {
  conversations: { name: "Conversations", main: "app", skip: ["thread", "Skip to the open thread"] },
  knowledge: { name: "Knowledge", main: "knowledge", skip: ["doc", "Skip to the open document"] },
  learnings: {
    name: "Learnings",
    main: "learnings",
    skip: ["learnings-queue", "Skip to the review queue"],
  },
};

/** The page's address: org (single-user), namespace, the page and its open thread or document.
 * The nav links carry the same context, so each also opens in a new tab. */
function contextParams(view) {
  const params = new URLSearchParams();
  if (state.who && state.who.auth === "off") params.set("org", state.org);
  params.set("ns", state.namespace);
  if (view !== "conversations") params.set("view", view);
  return params;
}

function writeHash({ thread = null, doc = null } = {}) {
  const params = contextParams(state.view);
  if (thread) params.set("thread", thread);
  if (doc) params.set("doc", doc);
  history.replaceState(null, "", `#${params}`);
  for (const link of document.querySelectorAll("#pages a")) {
    link.href = `#${contextParams(link.dataset.view)}`;
  }
}

/** Show one page (its <main>), mark it current in the nav and point the skip link at it. */
function showView(view) {
  state.view = VIEWS[view] ? view : "conversations";
  for (const [name, v] of Object.entries(VIEWS)) $(v.main).hidden = name !== state.view;
  for (const link of document.querySelectorAll("#pages a")) {
    if (link.dataset.view === state.view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const { name, skip } = VIEWS[state.view];
  $("page-name").textContent = name;
  const [target, text] = skip;
  const link = document.querySelector("a.skip");
  link.href = `#${target}`;
  link.textContent = text;
}

function describeIdentity(who) {
  if (who.auth === "off") return `Single-user server · org ${state.org} · no sign-in needed`;
  const parts = [`Signed in · org ${who.org}`, `role ${who.role}`];
  if (who.namespace) parts.push(`namespace ${who.namespace}`);
  if (who.read_user_id) parts.push(`user ${who.read_user_id}`);
  return parts.join(" · ");
}

function fillNamespaces() {
  const names = prefs().namespaces || [];
  $("namespaces").replaceChildren(...names.map((n) => el("option", { value: n })));
}

/** Load the shown page for the current org, namespace and user (no brief is opened). */
function openContext({ thread = null, doc = null } = {}) {
  rememberNamespace(state.namespace);
  savePrefs({ org: state.org, user: state.user });
  fillNamespaces();
  document.title = `${state.namespace} · ${VIEWS[state.view].name} · Loom`;
  if (state.view === "knowledge") {
    resetKnowledge();
    writeHash({ doc });
    loadDocuments();
    if (doc) openDocument(doc, { focus: false });
    return;
  }
  if (state.view === "learnings") {
    resetLearnings();
    writeHash();
    loadLearnings();
    return;
  }
  writeHash({ thread });
  resetThreads();
  resetSaved();
  closeThread();
  closeBrief();
  loadRecording();
  loadThreads();
  loadSaved();
  loadBriefs();
  if (thread) openThread({ namespace: state.namespace, threadId: thread, focus: false });
}

/** Empty every section and field: nothing of the previous person stays in the page. */
function clearPage() {
  resetThreads();
  resetSaved();
  resetBriefs();
  closeThread();
  resetKnowledge();
  resetLearnings();
  $("learnings-status").value = "pending";
  for (const id of ["org", "namespace", "user"]) $(id).value = "";
  $("namespaces").replaceChildren();
  document.title = "Loom · Conversations";
}

/** Ask for a token. Whoever signs in next starts clean: no token, user id, org or namespaces
 * of a previous person are kept. */
function showSignIn(message = "") {
  forgetPerson();
  clearPage();
  $("sign-in").hidden = false;
  $("context").hidden = true;
  for (const v of Object.values(VIEWS)) $(v.main).hidden = true;
  $("pages").hidden = true;
  $("sign-out").hidden = true;
  $("identity").textContent = "Not signed in";
  setError("sign-in-error", message);
  $("token").focus();
}

/** Sign out (or a token the server stopped accepting): also drop the previous person's
 * namespace and thread from the URL. */
function signOut(message = "") {
  history.replaceState(null, "", location.pathname + location.search);
  showSignIn(message);
}

/** Ask system.whoami who is calling and open the page; true when the server accepted. */
async function start() {
  let who;
  try {
    who = await state.api.call("system.whoami", {});
  } catch (err) {
    if (err.status === 401) showSignIn(state.api.token ? describe(err) : "");
    else $("identity").textContent = `The server did not answer: ${describe(err)}`;
    return false;
  }
  state.who = who;
  const saved = prefs();
  const params = hashParams();
  const own = who.auth === "off";
  state.org = own ? params.get("org") || saved.org || who.org : who.org;
  state.namespace = who.namespace || params.get("ns") || saved.namespaces?.[0] || DEFAULT_NAMESPACE;
  state.user = who.read_user_id || saved.user || (own ? "local" : "");

  $("sign-in").hidden = true;
  $("sign-out").hidden = own || !state.api.token;
  $("identity").textContent = describeIdentity(who);
  $("org-field").hidden = !own;
  $("org").value = state.org;
  $("namespace").value = state.namespace;
  $("namespace").readOnly = Boolean(who.namespace);
  $("user").value = state.user;
  $("user").readOnly = Boolean(who.read_user_id);
  $("context").hidden = false;
  $("pages").hidden = false;
  showView(params.get("view") || "conversations");
  openContext({ thread: params.get("thread"), doc: params.get("doc") });
  return true;
}

function init() {
  initRecording();
  initThreads();
  initThread();
  initSaved();
  initBriefs();
  initKnowledge();
  initLearnings();
  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    if (!token) return;
    const remember = $("remember").checked;
    $("token").value = "";
    state.api = new Api(token);
    if (await start()) saveToken(token, remember); // kept only once the server accepted it
  });
  $("sign-out").addEventListener("click", () => signOut());
  document.addEventListener("loom:unauthorized", (event) => {
    // start() answers its own whoami; this is a token refused while the page is open.
    if (!state.who || event.detail.api !== state.api) return;
    signOut("Your sign-in ended: the token is no longer valid. Sign in again.");
  });
  // The skip link moves focus; following it as a link would replace the state in the hash.
  document.querySelector("a.skip").addEventListener("click", (event) => {
    event.preventDefault();
    $(VIEWS[state.view].skip[0]).focus();
  });
  // The nav switches pages in place, keeping the org and namespace (and the hash in step).
  for (const link of document.querySelectorAll("#pages a")) {
    link.addEventListener("click", (event) => {
      event.preventDefault();
      if (link.dataset.view === state.view) return;
      showView(link.dataset.view);
      openContext();
    });
  }
  $("context").addEventListener("submit", (event) => {
    event.preventDefault();
    const namespace = $("namespace").value.trim();
    if (!namespace) return;
    if (state.who.auth === "off") state.org = $("org").value.trim() || state.who.org;
    state.namespace = namespace;
    state.user = $("user").value.trim();
    $("identity").textContent = describeIdentity(state.who);
    openContext();
  });
  document.addEventListener("loom:thread-opened", (event) => {
    if (state.view !== "conversations" || event.detail.namespace !== state.namespace) return;
    writeHash({ thread: event.detail.threadId });
  });
  document.addEventListener("loom:document-opened", (event) => {
    if (state.view === "knowledge") writeHash({ doc: event.detail.uri });
  });
  start();
}

init();

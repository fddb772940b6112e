// What the page is looking at: who the caller is, which org, namespace and user.

import { Api } from "./api.js";

const TOKEN_KEY = "loom.token";
const PREFS_KEY = "loom.dashboard";
export const AGENT = "dashboard"; // the agent name the page's own writes carry

export const state = {
  api: new Api(storedToken()),
  who: null, // system.whoami's answer
  org: "",
  namespace: "",
  user: "",
  view: "conversations", // the page shown: "conversations", "knowledge" or "learnings"
  titles: new Map(), // thread id -> its title as conversation.threads listed it
};

function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY) || localStorage.getItem(TOKEN_KEY) || null;
}

/** Keep a token system.whoami has just accepted (never one it refused). */
export function saveToken(token, remember) {
  sessionStorage.setItem(TOKEN_KEY, token);
  if (remember) localStorage.setItem(TOKEN_KEY, token);
}

/** Forget the signed-in person: the token and everything stored about them (user id, org,
 * namespaces), and the page's own idea of who and where they are. */
export function forgetPerson() {
  sessionStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(TOKEN_KEY);
  localStorage.removeItem(PREFS_KEY);
  state.api = new Api(null);
  state.who = null;
  state.org = "";
  state.namespace = "";
  state.user = "";
  state.view = "conversations";
  state.titles.clear();
}

export function prefs() {
  try {
    return JSON.parse(localStorage.getItem(PREFS_KEY) || "{}");
  } catch {
    return {};
  }
}

export function savePrefs(update) {
  localStorage.setItem(PREFS_KEY, JSON.stringify({ ...prefs(), ...update }));
}

export function rememberNamespace(namespace) {
  const seen = (prefs().namespaces || []).filter((n) => n !== namespace);
  savePrefs({ namespaces: [namespace, ...seen].slice(0, 20) });
}

export function isAdmin() {
  return Boolean(state.who && ["admin", "org_admin"].includes(state.who.role));
}

/** The identity fields every op takes; the server fills or checks them against the token. */
export function scope(namespace = state.namespace) {
  return { org: state.org, namespace };
}

export function signal(name, detail = {}) {
  document.dispatchEvent(new CustomEvent(`loom:${name}`, { detail }));
}

export function on(name, handler) {
  document.addEventListener(`loom:${name}`, (event) => handler(event.detail));
}

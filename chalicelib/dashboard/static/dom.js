// Small DOM helpers. Text always goes in through textContent: nothing the server sends is HTML.

import { describe } from "./api.js";

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function setError(id, message) {
  $(id).textContent = message || "";
}

let toastTimer = null;
export function announce(message) {
  const status = $("status");
  status.textContent = message;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    status.textContent = "";
  }, 4000);
}

export function when(ts) {
  if (!ts) return "";
  const date = new Date(ts);
  if (Number.isNaN(date.getTime())) return "";
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  if (seconds < 60) return "just now";
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["min", 60]]) {
    if (seconds >= size) return `${Math.floor(seconds / size)} ${unit} ago`;
  }
  return date.toLocaleString();
}

export function fullTime(ts) {
  const date = new Date(ts);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

export function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * A list the server pages by its cursor (knowledge.list, learnings.list): the ids of its <ol>,
 * its More button, its empty note and its error; `fetch(cursor)` asks for one page and answers
 * { rows, next }; `key(row)` names a row (each <li> carries it as data-key, so a row a page
 * repeats is listed once) and `item(row)` draws it. `load()` draws the first page (a refresh,
 * a new context, after a write) and supersedes any load in flight; `load({ more: true })`
 * appends the next page and waits for the one in flight; `reset()` empties the list and drops
 * any answer still on its way.
 */
export function cursorList({ list, more, empty, error, fetch, key, item }) {
  let cursor = null;
  let generation = 0; // an answer for an older load or context is dropped
  let loading = false;

  async function load({ more: next = false } = {}) {
    if (next && (loading || !cursor)) return;
    const mine = ++generation;
    loading = true;
    setError(error, "");
    const node = $(list);
    try {
      const answer = await fetch(next ? cursor : null);
      if (mine !== generation) return;
      if (!next) node.replaceChildren();
      const listed = new Set([...node.children].map((li) => li.dataset.key));
      for (const row of answer.rows.filter((r) => !listed.has(key(r)))) {
        const li = item(row);
        li.dataset.key = key(row);
        node.append(li);
      }
      cursor = answer.next || null;
      $(more).hidden = !cursor;
      $(empty).hidden = node.children.length > 0;
    } catch (err) {
      if (mine !== generation) return;
      if (!next) node.replaceChildren();
      $(more).hidden = true;
      $(empty).hidden = true;
      setError(error, describe(err));
    } finally {
      if (mine === generation) loading = false;
    }
  }

  function reset() {
    generation++;
    loading = false;
    cursor = null;
    $(list).replaceChildren();
    $(more).hidden = true;
    $(empty).hidden = true;
    setError(error, "");
  }

  return { load, reset };
}

/**
 * A search form whose newest answer alone is drawn: the ids of its query input, its results'
 * <ol>, the section that wraps them and its title, and its error; `fetch(query)` answers the
 * hits, `item(hit)` draws one and `none` is the note when there is none. `search(event)` runs
 * it (an empty query clears it); `clear()` empties it and drops any answer still on its way.
 */
export function searchBox({ query, results, wrap, title, error, fetch, item, none }) {
  let searches = 0;

  async function search(event) {
    event.preventDefault();
    const text = $(query).value.trim();
    setError(error, "");
    if (!text) return clear();
    const mine = ++searches;
    try {
      const hits = await fetch(text);
      if (mine !== searches) return;
      const node = $(results);
      node.replaceChildren(...hits.map(item));
      if (!hits.length) node.append(el("li", { class: "muted", text: none }));
      $(title).textContent = `Results for “${text}”`;
      $(wrap).hidden = false;
    } catch (err) {
      if (mine !== searches) return;
      setError(error, describe(err));
    }
  }

  function clear() {
    searches++;
    $(results).replaceChildren();
    $(wrap).hidden = true;
    $(query).value = "";
  }

  return { search, clear };
}

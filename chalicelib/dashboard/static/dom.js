// Small DOM helpers. Text always goes in through textContent: nothing the server sends is HTML.

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

// The Record conversations switch. Fail-closed: it shows "on" only when the server has just
// said so for this namespace; anything unread or unreadable shows as unknown, drawn as off.

import { describe, publishedOps } from "./api.js";
import { $, announce, setError } from "./dom.js";
import { isAdmin, scope, state } from "./state.js";

// A viewer-level read of the switch; where the server has no such op the state stays unknown.
export const READ_OP = "conversation.get_logging";

let recording = null; // true, false, or null (unknown)
let generation = 0; // answers for an earlier namespace are dropped

function render() {
  const button = $("recording-switch");
  const text = $("recording-state");
  const on = recording === true;
  button.setAttribute("aria-checked", on ? "true" : "false");
  text.dataset.state = recording === null ? "unknown" : on ? "on" : "off";
  text.textContent = recording === null ? "Unknown (treated as off)" : on ? "On" : "Off";
  const admin = isAdmin();
  button.disabled = !admin;
  const notes = [];
  if (!admin) notes.push("Only an admin can change this.");
  if (recording === null) {
    notes.push("Its state could not be read here: treat recording as off until it is set.");
  } else if (!on) {
    notes.push("Appends to this namespace are accepted and not kept.");
  }
  $("recording-note").textContent = notes.join(" ");
}

export async function loadRecording() {
  const mine = ++generation;
  recording = null;
  setError("recording-error", "");
  render();
  let answer = null;
  try {
    if ((await publishedOps()).has(READ_OP)) answer = await state.api.call(READ_OP, scope());
  } catch {
    answer = null; // unreadable: stays unknown
  }
  if (mine !== generation) return;
  recording = answer && typeof answer.enabled === "boolean" ? answer.enabled : null;
  render();
}

async function toggle() {
  if (!isAdmin()) return;
  const mine = ++generation;
  const want = recording !== true;
  const button = $("recording-switch");
  button.disabled = true;
  setError("recording-error", "");
  try {
    const answer = await state.api.call("conversation.set_logging", {
      ...scope(),
      enabled: want,
    });
    if (mine !== generation) return;
    recording = typeof answer.enabled === "boolean" ? answer.enabled : null;
    announce(`Recording is ${recording ? "on" : "off"} for ${state.namespace}.`);
  } catch (err) {
    if (mine !== generation) return;
    recording = null; // the outcome is not known: never show it as on
    setError("recording-error", describe(err));
  }
  render();
}

export function initRecording() {
  $("recording-switch").addEventListener("click", toggle);
  render();
}

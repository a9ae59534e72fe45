// /calls: the gateway's recent and live calls, and one call's timeline drawn with the browser
// page's view (timeline.js). Records come from /calls/{id}/records, polled from the byte
// offset already read until the call log says `call_closed` (gateway/callviews.py).

import { TimelineView } from "./timeline.js";

const $ = (selector) => document.querySelector(selector);
const POLL_MS = 500;
const LIST_POLL_MS = 2000;

const records = []; // every record shown, for tests and curious users
const state = { ended: false, error: "" };

function showError(message) {
  state.error = message;
  $("#error").hidden = !message;
  $("#error").textContent = message;
}

async function getJson(url) {
  const response = await fetch(url, { cache: "no-store", credentials: "same-origin" });
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return response.json();
}

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "";
}

function cell(text) {
  const td = document.createElement("td");
  td.textContent = text ?? ""; // never innerHTML: provider ids and reasons come from peers
  return td;
}

function row(call) {
  const tr = document.createElement("tr");
  tr.dataset.state = call.state;
  const link = document.createElement("a");
  link.href = `/calls/${encodeURIComponent(call.call_id)}`;
  link.textContent = call.call_id;
  const first = document.createElement("td");
  first.append(link);
  const close = call.close_code ? `${call.close_code} ${call.close_reason}` : "";
  tr.append(first, cell(call.dialect), cell(call.provider_call_id), cell(when(call.started_at)),
    cell(call.state), cell(close));
  return tr;
}

async function showList() {
  $("#calls").hidden = false;
  for (;;) {
    try {
      const { calls } = await getJson("/calls?format=json");
      $("#calls tbody").replaceChildren(...calls.map(row));
      window.voicegate.calls = calls;
      showError("");
    } catch (error) {
      showError(String(error.message || error));
    }
    await new Promise((resolve) => setTimeout(resolve, LIST_POLL_MS));
  }
}

async function showCall(callId) {
  $("#summary").textContent = `call ${callId}`;
  $("#timeline").hidden = false;
  $("#details").hidden = false;
  const view = new TimelineView($("#timeline"), $("#log"));
  const base = `/calls/${encodeURIComponent(callId)}/records`;
  let offset = 0;
  while (!state.ended) {
    try {
      const answer = await getJson(`${base}?offset=${offset}`);
      offset = answer.offset;
      for (const record of answer.records) {
        records.push(record);
        view.add(record);
      }
      state.ended = answer.ended;
      if (state.ended) view.end();
      view.tick(view.endMs);
      showError("");
    } catch (error) {
      showError(String(error.message || error));
    }
    if (!state.ended) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  $("#summary").textContent = `call ${callId} (ended)`;
}

// Read-only handles for tests and the console.
window.voicegate = { records, state, calls: [] };

const match = window.location.pathname.match(/^\/calls\/([^/]+)$/);
if (match) showCall(decodeURIComponent(match[1]));
else showList();

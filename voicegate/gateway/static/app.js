// The voicegate browser client: the start/stop button, the status and error lines, the live
// timeline and the playback numbers. Everything is plain ES modules served by the gateway.

import { Phone } from "./phone.js";
import { TimelineView } from "./timeline.js";

const $ = (selector) => document.querySelector(selector);
const TICK_MS = 100;

const button = $("#call");
const status = $("#status");
const errorLine = $("#error");
const meter = $("#mic-level");
const numbers = $("#numbers");
const timeline = new TimelineView($("#timeline"), $("#log"));

const socketUrl = new URL("/browser", window.location.href);
socketUrl.protocol = window.location.protocol === "https:" ? "wss:" : "ws:";

const records = []; // every timeline record of the current call, for tests and curious users

// The page's query string is the call's metadata: /?tenant=acme sends {"tenant": "acme"}.
const metadata = Object.fromEntries(new URLSearchParams(window.location.search));

const phone = new Phone(socketUrl.href, {
  onState(state, detail) {
    if (state === "idle") timeline.end(); // the lanes stop where the call ended
    status.dataset.state = state;
    status.textContent = detail || state;
    const busy = state !== "idle";
    button.textContent = busy ? "Hang up" : "Start call";
    button.dataset.action = busy ? "stop" : "start";
    button.disabled = state === "opening";
  },
  onError(message) {
    errorLine.hidden = !message;
    errorLine.textContent = message || "";
  },
  onCall(callId) {
    records.length = 0;
    timeline.reset();
    $("#call-id").textContent = callId;
  },
  onRecord(record) {
    records.push(record);
    timeline.add(record);
  },
  onMicLevel(level) {
    meter.style.width = `${Math.round(level * 100)}%`;
  },
}, metadata);

button.addEventListener("click", () => {
  if (button.dataset.action === "stop") phone.stop();
  else phone.start();
});

const SHOWN = [
  ["playedMs", "bot audio played (ms)"],
  ["bufferedMs", "in the jitter buffer (ms)"],
  ["marksAcked", "marks acknowledged"],
  ["clears", "clears (barge-ins)"],
  ["droppedMs", "bot audio dropped by clears (ms)"],
  ["bufferDroppedMs", "of it, dropped from this page's buffer (ms)"],
  ["underruns", "buffer underruns"],
  ["framesSent", "microphone frames sent"],
];

// The page's numbers, with the dropped audio the gateway counted: the page's own buffer
// holds only the send-ahead, while a barge-in drops the rest of the answer at the gateway.
function numbersNow() {
  return { ...phone.stats, droppedMs: timeline.droppedMs, bufferDroppedMs: phone.stats.droppedMs };
}

function showNumbers() {
  const now = numbersNow();
  const rows = SHOWN.map(([key, label]) => {
    const row = document.createElement("div");
    const term = document.createElement("dt");
    const value = document.createElement("dd");
    term.textContent = label;
    value.textContent = String(now[key]);
    value.dataset.stat = key;
    row.append(term, value);
    return row;
  });
  numbers.replaceChildren(...rows);
}

setInterval(() => {
  if (phone.connection) timeline.tick(phone.connection.mediaMs);
  showNumbers();
}, TICK_MS);
showNumbers();

// Read-only handles for tests and the console (tests/browser/ drive the page through them).
window.voicegate = {
  get stats() {
    return { ...numbersNow(), state: status.dataset.state, error: errorLine.textContent };
  },
  records,
};

// One call over one WebSocket, in the browser dialect (docs/protocols/browser.md).

import { CAPTURE_RATE, FRAME_MS } from "./audio.js";

const PROTOCOL_VERSION = 1;
// Microphone audio kept while the socket opens, then sent in order: the gateway's media clock
// counts samples, so none may be skipped (§2). Past this much, the call could not catch up.
const MAX_QUEUED_FRAMES = (5 * 1000) / FRAME_MS;
// Close codes that mean the page itself is broken: reconnecting would only fail again.
const PROTOCOL_CLOSES = new Set([1002, 1003, 1007, 1009]);

export class Connection {
  // handlers: onStarted({callId, sampleRate}), onAudio(Int16Array), onMark(name), onClear(),
  //           onRecord(record), onClosed(outcome) with outcome.kind one of
  //           "ended" | "refused" | "protocol" | "lost".
  constructor(url, handlers, metadata = {}) {
    this.handlers = handlers;
    this.queue = [];
    this.started = false; // the gateway's `started` arrived
    this.stopReason = null; // the gateway's `stop` reason, if it sent one
    this.hungUp = false; // this page sent `stop`
    this.framesSent = 0;
    this.metadata = metadata;
    this.socket = new WebSocket(url);
    this.socket.binaryType = "arraybuffer";
    this.socket.onopen = () => this.onOpen();
    this.socket.onmessage = (event) => this.onMessage(event.data);
    this.socket.onclose = (event) => this.onClose(event);
  }

  get open() {
    return this.socket.readyState === WebSocket.OPEN && !this.hungUp;
  }

  // Media time at the gateway: it counts the samples received since `start` (§2).
  get mediaMs() {
    return this.framesSent * FRAME_MS;
  }

  onOpen() {
    const start = { type: "start", version: PROTOCOL_VERSION, sampleRate: CAPTURE_RATE };
    this.socket.send(JSON.stringify({ ...start, metadata: this.metadata }));
    for (const frame of this.queue.splice(0)) this.sendFrame(frame);
  }

  sendFrame(frame) {
    if (this.open) {
      this.socket.send(frame);
      this.framesSent += 1;
    } else if (this.socket.readyState === WebSocket.CONNECTING) {
      if (this.queue.length >= MAX_QUEUED_FRAMES) this.queue.shift();
      this.queue.push(frame);
    }
  }

  send(message) {
    if (this.open) this.socket.send(JSON.stringify(message));
  }

  hangUp(reason) {
    this.send({ type: "stop", reason });
    this.hungUp = true;
    this.socket.close(1000, "hung up");
  }

  onMessage(data) {
    if (data instanceof ArrayBuffer) {
      if (this.started) this.handlers.onAudio(new Int16Array(data));
      return;
    }
    const message = JSON.parse(data);
    switch (message.type) {
      case "started":
        this.started = true;
        this.handlers.onStarted({ callId: message.callId, sampleRate: message.sampleRate });
        break;
      case "mark":
        this.handlers.onMark(message.name);
        break;
      case "clear":
        this.handlers.onClear();
        break;
      case "event":
        this.handlers.onRecord(message);
        break;
      case "stop":
        this.stopReason = message.reason || "";
        break;
      default:
        break; // newer gateways may send types this page does not know (§8)
    }
  }

  onClose(event) {
    this.handlers.onClosed(this.outcome(event.code, event.reason));
  }

  outcome(code, reason) {
    if (this.hungUp) return { kind: "ended", code, reason: "you hung up" };
    if (this.stopReason !== null) {
      // A `stop` before `started` is a refusal (§3): at capacity (1013), starting, draining.
      const kind = this.started ? "ended" : "refused";
      return { kind, code, reason: this.stopReason || reason };
    }
    if (PROTOCOL_CLOSES.has(code)) return { kind: "protocol", code, reason };
    return { kind: "lost", code, reason, started: this.started };
  }
}

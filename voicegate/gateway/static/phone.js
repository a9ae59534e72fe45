// The page's phone: microphone and speaker (AudioIO) joined to a call (Connection), with
// reconnection when the connection is lost and the numbers the page shows (and tests read).

import { AudioIO } from "./audio.js";
import { Connection } from "./connection.js";

const RECONNECT_DELAYS_MS = [1000, 2000, 4000, 8000, 8000];

function emptyStats() {
  return {
    calls: 0, // calls the gateway accepted (started)
    reconnects: 0,
    framesSent: 0,
    audioFrames: 0, // bot audio frames received
    marksAcked: 0,
    clears: 0,
    droppedMs: 0, // queued bot audio dropped by clears
    lastClear: null, // {droppedMs, marks}
    playedMs: 0, // bot audio rendered by the playback worklet
    bufferedMs: 0,
    underruns: 0,
    records: 0,
  };
}

export class Phone {
  // view: onState(state, detail), onError(message | null), onRecord(record), onCall(callId),
  //       onMicLevel(0..1)
  // metadata: sent in `start`; it seeds the agent's `seed: true` memory fields (protocol §4).
  constructor(url, view, metadata = {}) {
    this.url = url;
    this.metadata = metadata;
    this.view = view;
    this.audio = new AudioIO({
      onFrame: (frame) => this.onFrame(frame),
      onPlayback: (message) => this.onPlayback(message),
    });
    this.connection = null;
    this.generation = 0;
    this.attempt = 0;
    this.retryTimer = null;
    this.stats = emptyStats();
  }

  get active() {
    return this.audio.context !== null;
  }

  async start() {
    this.view.onError(null);
    this.stats = emptyStats();
    this.view.onState("opening", "opening the microphone");
    try {
      await this.audio.open();
    } catch (error) {
      await this.audio.close();
      this.view.onState("idle", "");
      this.view.onError(error.message);
      return;
    }
    this.connect();
  }

  async stop() {
    clearTimeout(this.retryTimer);
    if (this.connection) this.connection.hangUp("user clicked hang up");
    this.connection = null;
    await this.audio.close();
    this.view.onState("idle", "call ended");
  }

  connect() {
    this.generation += 1;
    const generation = this.generation;
    this.audio.play({ type: "reset", generation });
    this.view.onState("connecting", "connecting to the gateway");
    const handlers = {
      onStarted: (info) => this.onStarted(info, generation),
      onAudio: (samples) => {
        this.stats.audioFrames += 1;
        this.audio.play({ type: "audio", samples }, [samples.buffer]);
      },
      onMark: (name) => this.audio.play({ type: "mark", name }),
      onClear: () => this.audio.play({ type: "clear" }),
      onRecord: (record) => {
        this.stats.records += 1;
        this.view.onRecord(record);
      },
      onClosed: (outcome) => this.onClosed(outcome, generation),
    };
    this.connection = new Connection(this.url, handlers, this.metadata);
  }

  onStarted(info, generation) {
    this.attempt = 0;
    this.stats.calls += 1;
    this.audio.play({ type: "format", sampleRate: info.sampleRate, generation });
    this.view.onError(null);
    this.view.onCall(info.callId);
    this.view.onState("in-call", "in call");
  }

  onFrame(frame) {
    this.view.onMicLevel(level(new Int16Array(frame)));
    if (!this.connection) return;
    this.connection.sendFrame(frame);
    this.stats.framesSent = this.connection.framesSent;
  }

  // What the playback worklet reports (playback-worklet.js).
  onPlayback(message) {
    if (message.generation !== this.generation || !this.connection) return;
    const ms = (samples) => Math.round((samples * 1000) / message.rate);
    switch (message.type) {
      case "mark":
        this.ack(message.name);
        break;
      case "cleared":
        this.stats.clears += 1;
        this.stats.droppedMs += ms(message.dropped);
        this.stats.playedMs = ms(message.played);
        this.stats.lastClear = {
          droppedMs: ms(message.dropped),
          playedMs: ms(message.played), // where playback stopped
          marks: message.marks,
        };
        message.marks.forEach((name) => this.ack(name)); // §6: cleared marks, in order
        break;
      case "stats":
        this.stats.playedMs = ms(message.played);
        this.stats.bufferedMs = ms(message.buffered);
        this.stats.underruns = message.underruns;
        break;
    }
  }

  ack(name) {
    this.connection.send({ type: "mark", name });
    this.stats.marksAcked += 1;
  }

  async onClosed(outcome, generation) {
    if (generation !== this.generation || !this.connection) return; // an old or hung-up call
    this.connection = null;
    this.audio.play({ type: "reset", generation: ++this.generation });
    const why = outcome.reason ? `: ${outcome.reason}` : "";
    switch (outcome.kind) {
      case "ended":
        await this.audio.close();
        this.view.onState("idle", `call ended${why}`);
        return;
      case "refused":
        await this.audio.close();
        this.view.onState("idle", "call refused");
        this.view.onError(refusal(outcome));
        return;
      case "protocol":
        await this.audio.close();
        this.view.onState("idle", "call failed");
        this.view.onError(`The gateway ended the call (code ${outcome.code}${why}).`);
        return;
      default:
        this.reconnect(outcome);
    }
  }

  reconnect(outcome) {
    if (this.attempt >= RECONNECT_DELAYS_MS.length) {
      this.audio.close();
      this.view.onState("idle", "disconnected");
      this.view.onError("Connection to the gateway lost; it did not come back. Press Start call to try again.");
      return;
    }
    const delay = RECONNECT_DELAYS_MS[this.attempt];
    this.attempt += 1;
    const code = outcome.code ? ` (code ${outcome.code}${outcome.reason ? ": " + outcome.reason : ""})` : "";
    const lost = outcome.started ? "Connection to the gateway lost" : "Could not reach the gateway";
    this.view.onError(
      `${lost}${code}. Reconnecting in ${delay / 1000} s (attempt ${this.attempt} of ${RECONNECT_DELAYS_MS.length}); a new call starts.`,
    );
    this.view.onState("reconnecting", "reconnecting");
    this.retryTimer = setTimeout(() => {
      if (!this.active) return;
      this.stats.reconnects += 1;
      this.connect();
    }, delay);
  }
}

function refusal(outcome) {
  const reason = outcome.reason || "no reason given";
  if (outcome.code === 1013) {
    // 1013 "try again later": the gateway is full (or still starting), not broken.
    return `The gateway cannot take a call right now: ${reason}. Try again in a moment.`;
  }
  return `The gateway refused the call: ${reason} (code ${outcome.code}).`;
}

function level(samples) {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.min(1, Math.sqrt(sum / Math.max(1, samples.length)) / 8000);
}

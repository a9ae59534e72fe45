// The page's audio: the microphone through the capture worklet, the bot through the playback
// worklet, both in one AudioContext (docs/protocols/browser.md §9).

export const CAPTURE_RATE = 16000; // what the page declares in `start.sampleRate`
export const FRAME_MS = 20;
const PRIME_MS = 60; // jitter buffer filled before playback starts (§9: 40-100 ms)

// Capture with the browser's echo cancellation, noise suppression and gain control: without
// them the bot hears itself through the speakers and interrupts itself (§9).
const MICROPHONE = {
  audio: {
    channelCount: 1,
    echoCancellation: true,
    noiseSuppression: true,
    autoGainControl: true,
  },
};

export class MicrophoneError extends Error {
  constructor(message, cause) {
    super(message);
    this.name = "MicrophoneError";
    this.cause = cause;
  }
}

// Why getUserMedia failed, in words a caller can act on.
function microphoneProblem(error) {
  switch (error && error.name) {
    case "NotAllowedError":
    case "SecurityError":
      return "Microphone access was denied. Allow the microphone for this page and press Start call again.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No microphone was found. Connect one and press Start call again.";
    case "NotReadableError":
      return "The microphone is in use by another application or could not be opened.";
    default:
      return `The microphone could not be opened (${(error && error.message) || error}).`;
  }
}

export class AudioIO {
  // handlers: onFrame(ArrayBuffer), onPlayback(message from the playback worklet)
  constructor(handlers) {
    this.handlers = handlers;
    this.stream = null;
    this.context = null;
    this.playback = null;
    this.capture = null;
  }

  async open() {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      throw new MicrophoneError("This page needs a secure origin (https or localhost) for the microphone.");
    }
    try {
      this.stream = await navigator.mediaDevices.getUserMedia(MICROPHONE);
    } catch (error) {
      throw new MicrophoneError(microphoneProblem(error), error);
    }
    this.context = new AudioContext({ latencyHint: "interactive" });
    await this.context.audioWorklet.addModule("/static/capture-worklet.js");
    await this.context.audioWorklet.addModule("/static/playback-worklet.js");
    this.capture = new AudioWorkletNode(this.context, "voicegate-capture", {
      numberOfInputs: 1,
      numberOfOutputs: 0,
      processorOptions: { targetRate: CAPTURE_RATE, frameMs: FRAME_MS },
    });
    this.capture.port.onmessage = (event) => this.handlers.onFrame(event.data);
    this.context.createMediaStreamSource(this.stream).connect(this.capture);
    this.playback = new AudioWorkletNode(this.context, "voicegate-playback", {
      numberOfInputs: 0,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      processorOptions: { primeMs: PRIME_MS },
    });
    this.playback.port.onmessage = (event) => this.handlers.onPlayback(event.data);
    this.playback.connect(this.context.destination);
    await this.context.resume();
  }

  // Messages to the playback worklet, in socket order (see playback-worklet.js).
  play(message, transfer = []) {
    if (this.playback) this.playback.port.postMessage(message, transfer);
  }

  async close() {
    if (this.stream) this.stream.getTracks().forEach((track) => track.stop());
    if (this.context) await this.context.close();
    this.stream = this.context = this.playback = this.capture = null;
  }
}

// Playback of the bot's audio with a small jitter buffer (docs/protocols/browser.md §6, §9).
//
// Runs on the audio thread. The page posts, in the order they arrived on the socket:
//   {type: "format", sampleRate, generation}  a new call: forget everything, set the input rate
//   {type: "audio", samples: Int16Array}       bot PCM16 at that rate, to play in order
//   {type: "mark", name}                       acknowledge once the audio before it has played
//   {type: "clear"}                            stop at once, drop the buffer, release all marks
//   {type: "reset", generation}                drop everything without acknowledging (call over)
// and this processor posts back {type: "mark"}, {type: "cleared"} and periodic {type: "stats"}.
// Mark positions count samples at the context rate; a mark is played once the render position
// (samples this processor has written to its output) passes it.

const STATS_EVERY_S = 0.1;

// Linear interpolation from the gateway's rate to the context's; state carries across chunks
// so a segment split into 20 ms frames plays as one continuous signal.
class Upsampler {
  constructor(inputRate, outputRate) {
    this.step = inputRate / outputRate;
    this.restart();
  }

  restart() {
    this.previous = 0; // the last input sample of the previous chunk, at index -1
    this.position = 0; // the next output instant, in input samples from this chunk's start
  }

  push(int16) {
    const input = Float32Array.from(int16, (sample) => sample / 32768);
    const count = Math.max(0, Math.ceil((input.length - 1 - this.position) / this.step));
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) {
      const index = Math.floor(this.position);
      const fraction = this.position - index;
      const left = index < 0 ? this.previous : input[index];
      out[i] = left + (input[index + 1] - left) * fraction;
      this.position += this.step;
    }
    this.position -= input.length;
    this.previous = input[input.length - 1];
    return out;
  }
}

class PlaybackProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    this.primeSamples = Math.round((sampleRate * options.processorOptions.primeMs) / 1000);
    this.generation = 0;
    this.upsampler = null;
    this.underruns = 0;
    this.lastStats = 0;
    this.forget();
    this.port.onmessage = (event) => this.onMessage(event.data);
  }

  forget() {
    this.chunks = []; // Float32Arrays at the context rate
    this.offset = 0; // samples of chunks[0] already played
    this.queued = 0; // samples ever queued in this call
    this.played = 0; // samples ever played in this call
    this.marks = []; // {name, at}: pending, in arrival order
    this.primed = false;
  }

  get buffered() {
    return this.queued - this.played;
  }

  onMessage(message) {
    switch (message.type) {
      case "format":
        this.reset(message.generation);
        this.upsampler = new Upsampler(message.sampleRate, sampleRate);
        break;
      case "audio":
        // The page sends audio only after `format` (the gateway's `started`, browser.md §3).
        if (this.upsampler) this.enqueue(this.upsampler.push(message.samples));
        break;
      case "mark":
        this.marks.push({ name: message.name, at: this.queued });
        break;
      case "clear":
        this.clear();
        break;
      case "reset":
        this.reset(message.generation);
        break;
    }
  }

  enqueue(samples) {
    if (samples.length === 0) return;
    this.chunks.push(samples);
    this.queued += samples.length;
  }

  clear() {
    // browser.md §6: silence at once, drop every buffered sample, then release every
    // pending mark in order (the page acknowledges them).
    const dropped = this.buffered;
    const marks = this.marks.map((mark) => mark.name);
    this.chunks = [];
    this.offset = 0;
    this.queued = this.played; // positions stay comparable across the clear
    this.marks = [];
    this.primed = false;
    if (this.upsampler) this.upsampler.restart();
    this.port.postMessage({
      type: "cleared",
      generation: this.generation,
      dropped,
      played: this.played,
      marks,
      rate: sampleRate,
    });
  }

  reset(generation) {
    this.forget();
    this.generation = generation;
    this.upsampler = null;
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    out.fill(0);
    if (!this.primed) {
      // Start once the jitter buffer holds primeSamples, or a whole segment (its end mark
      // has arrived): a short last sentence must not wait for audio that is not coming.
      const segmentQueued = this.marks.some((mark) => mark.at > this.played);
      this.primed = this.buffered >= this.primeSamples || (segmentQueued && this.buffered > 0);
    }
    if (this.primed) this.render(out);
    this.releaseMarks();
    this.report();
    return true;
  }

  render(out) {
    let written = 0;
    while (written < out.length && this.chunks.length > 0) {
      const chunk = this.chunks[0];
      const count = Math.min(out.length - written, chunk.length - this.offset);
      out.set(chunk.subarray(this.offset, this.offset + count), written);
      written += count;
      this.offset += count;
      if (this.offset === chunk.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    this.played += written;
    if (this.buffered === 0) {
      // Ran dry: wait for a full jitter buffer again. Dry mid-segment is an underrun.
      this.primed = false;
      if (!this.marks.some((mark) => mark.at === this.played)) this.underruns += 1;
    }
  }

  releaseMarks() {
    while (this.marks.length > 0 && this.marks[0].at <= this.played) {
      const { name } = this.marks.shift();
      this.port.postMessage({ type: "mark", generation: this.generation, name });
    }
  }

  report() {
    if (currentTime - this.lastStats < STATS_EVERY_S) return;
    this.lastStats = currentTime;
    this.port.postMessage({
      type: "stats",
      generation: this.generation,
      played: this.played,
      buffered: this.buffered,
      underruns: this.underruns,
      rate: sampleRate,
    });
  }
}

registerProcessor("voicegate-playback", PlaybackProcessor);

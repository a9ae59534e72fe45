// Microphone capture for the browser dialect (docs/protocols/browser.md §2, §9).
//
// Runs on the audio thread: low-pass filters the context-rate input, resamples it to the rate
// the page declares in `start` (16 kHz), and posts whole 20 ms frames of PCM16 to the page as
// transferable ArrayBuffers. Every captured sample is kept, in order: the gateway's media
// clock counts them (§2).

const TAPS = 63; // low-pass length at the input rate; odd, so the filter delay is whole

// Windowed-sinc low-pass (Blackman window) with its cutoff below the output's Nyquist rate, so
// voices keep their band while everything that would fold back into it is removed.
function lowPassTaps(inputRate, outputRate) {
  const cutoff = (0.45 * outputRate) / inputRate; // cycles per input sample
  const taps = new Float32Array(TAPS);
  const middle = (TAPS - 1) / 2;
  let sum = 0;
  for (let n = 0; n < TAPS; n++) {
    const x = n - middle;
    const sinc = x === 0 ? 2 * cutoff : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const window =
      0.42 - 0.5 * Math.cos((2 * Math.PI * n) / (TAPS - 1)) +
      0.08 * Math.cos((4 * Math.PI * n) / (TAPS - 1));
    taps[n] = sinc * window;
    sum += taps[n];
  }
  return taps.map((tap) => tap / sum); // unity gain at 0 Hz
}

// A streaming resampler: FIR low-pass at the input rate, then linear interpolation at the
// output instants. State carries across 128-sample render quanta.
class Downsampler {
  constructor(inputRate, outputRate) {
    this.step = inputRate / outputRate;
    this.taps = inputRate === outputRate ? null : lowPassTaps(inputRate, outputRate);
    this.history = new Float32Array(TAPS - 1);
    this.previous = 0; // the last filtered sample of the previous block, at index -1
    this.position = 0; // the next output instant, in filtered samples from this block's start
  }

  push(input) {
    const filtered = this.filter(input);
    const out = [];
    const last = filtered.length - 1;
    while (this.position < last) {
      const index = Math.floor(this.position);
      const fraction = this.position - index;
      const left = index < 0 ? this.previous : filtered[index];
      out.push(left + (filtered[index + 1] - left) * fraction);
      this.position += this.step;
    }
    this.position -= filtered.length;
    this.previous = filtered[last];
    return out;
  }

  filter(input) {
    if (this.taps === null) return input;
    const joined = new Float32Array(this.history.length + input.length);
    joined.set(this.history);
    joined.set(input, this.history.length);
    const out = new Float32Array(input.length);
    for (let i = 0; i < input.length; i++) {
      let acc = 0;
      for (let k = 0; k < TAPS; k++) acc += this.taps[k] * joined[i + k];
      out[i] = acc;
    }
    this.history = joined.slice(input.length);
    return out;
  }
}

class CaptureProcessor extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const { targetRate, frameMs } = options.processorOptions;
    this.resampler = new Downsampler(sampleRate, targetRate);
    this.frameSamples = (targetRate * frameMs) / 1000;
    this.frame = new Int16Array(this.frameSamples);
    this.filled = 0;
  }

  process(inputs) {
    // No input channel yet (the source is still starting): nothing was captured.
    const channel = inputs[0] && inputs[0][0];
    if (channel) this.append(this.resampler.push(channel));
    return true;
  }

  append(samples) {
    for (const sample of samples) {
      const clamped = Math.max(-1, Math.min(1, sample));
      this.frame[this.filled++] = Math.round(clamped < 0 ? clamped * 32768 : clamped * 32767);
      if (this.filled === this.frameSamples) {
        const buffer = this.frame.buffer;
        this.port.postMessage(buffer, [buffer]); // transferred: this.frame is now detached
        this.frame = new Int16Array(this.frameSamples);
        this.filled = 0;
      }
    }
  }
}

registerProcessor("voicegate-capture", CaptureProcessor);

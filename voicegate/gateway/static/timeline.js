// The live view of a call: the gateway's timeline records (docs/protocols/browser.md §5, the
// `event` messages) drawn as lanes on a scrolling time axis, and a log of what was said/done.
// Times are the gateway's media time (ms since the call started), as in the records.

const PX_PER_S = 120;
const LANES = ["caller", "bot", "tools", "barge-in", "time"];
const SAME_MOMENT_MS = 100;

function seconds(ms) {
  return `${(ms / 1000).toFixed(2)} s`;
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text; // never innerHTML: records carry user text
  return node;
}

export class TimelineView {
  constructor(scroller, log) {
    this.scroller = scroller;
    this.area = scroller.querySelector(".lanes");
    this.log = log;
    this.reset();
  }

  reset() {
    this.lanes = {};
    this.area.replaceChildren();
    for (const name of LANES) {
      const lane = element("div", "lane");
      lane.dataset.lane = name;
      lane.append(element("span", "lane-label", name));
      this.area.append(lane);
      this.lanes[name] = lane;
    }
    this.log.replaceChildren();
    this.open = {}; // bars still growing: caller, bot, and tools by call id
    this.utterances = []; // transcript labels of utterances not yet final, oldest first
    this.lastLabel = {}; // per lane: the latest text label, cut short by the next one
    this.lastInterruption = null;
    this.lastSay = null;
    this.sentences = {}; // per turn: [{text, parts}] of every `say`, to mark what was not heard
    this.droppedMs = 0; // bot audio the caller never heard because of barge-ins (flush_sent)
    this.endMs = 0;
    this.seconds = 0; // ticks drawn on the time axis
    this.ended = false;
  }

  // A position on the time axis, right of the lane labels.
  x(ms) {
    return `calc(var(--label-width) + ${(ms / 1000) * PX_PER_S}px)`;
  }

  bar(lane, startMs, className, text) {
    const bar = element("div", `bar ${className}`, text);
    bar.style.left = this.x(startMs);
    bar.dataset.start = String(startMs);
    this.lanes[lane].append(bar);
    return bar;
  }

  grow(bar, endMs) {
    bar.style.width = `${(Math.max(0, endMs - Number(bar.dataset.start)) / 1000) * PX_PER_S}px`;
  }

  close(bar, endMs) {
    if (!bar) return;
    this.grow(bar, endMs);
    bar.classList.add("closed");
  }

  marker(lane, atMs, className, text) {
    const mark = element("div", `marker ${className}`, text);
    mark.style.left = this.x(atMs);
    this.lanes[lane].append(mark);
    return mark;
  }

  // A text marker that ends where the lane's next one starts (the full text is its title).
  label(lane, atMs, className, text) {
    const previous = this.lastLabel[lane];
    if (previous) {
      const room = ((atMs - Number(previous.dataset.at)) / 1000) * PX_PER_S - 6;
      previous.style.maxWidth = `${Math.max(8, room)}px`;
    }
    const label = this.marker(lane, atMs, `label ${className}`, text);
    label.dataset.at = String(atMs);
    label.title = text;
    this.lastLabel[lane] = label;
    return label;
  }

  note(record, text) {
    const item = element("li", "", "");
    item.dataset.event = record.event;
    item.append(element("time", "", seconds(record.t_ms)), element("span", "", text));
    this.log.prepend(item);
    return item;
  }

  add(record) {
    this.endMs = Math.max(this.endMs, record.t_ms);
    const draw = this[`on_${record.event}`];
    if (draw) draw.call(this, record);
  }

  on_call_started(r) {
    this.note(r, `call ${r.call_id} started`);
  }

  on_speech_started(r) {
    this.open.caller = this.bar("caller", r.onset_ms, "speech");
    this.utterances.push(this.label("caller", r.onset_ms, "transcript", ""));
    // Finals may come after the next utterance starts, in order; a recogniser that never
    // finalises an utterance must not hold the labels of the later ones.
    if (this.utterances.length > 2) this.utterances.shift();
  }

  on_speech_ended(r) {
    this.close(this.open.caller, r.end_ms);
    this.open.caller = null;
  }

  on_transcript(r) {
    if (this.utterances.length === 0) {
      this.utterances.push(this.label("caller", r.t_ms, "transcript", ""));
    }
    const label = this.utterances[0];
    label.textContent = `“${r.text}”`;
    label.title = r.text;
    label.classList.toggle("final", r.final);
    if (r.final) {
      this.note(r, `you: “${r.text}”`);
      this.utterances.shift();
    }
  }

  on_bot_speaking(r) {
    this.open.bot = this.bar("bot", r.t_ms, "speech");
  }

  on_bot_quiet(r) {
    this.close(this.open.bot, r.t_ms);
    this.open.bot = null;
  }

  on_say(r) {
    // Sentences said together (a reply and a tool's announcement) share one label, one span
    // per sentence so each can be struck through on its own when it was never heard.
    const last = this.lastSay;
    let label;
    if (last && r.t_ms - last.t_ms < SAME_MOMENT_MS) {
      label = last.label;
      label.append(" ");
      label.title = `${label.title} ${r.text}`;
    } else {
      label = this.label("bot", r.t_ms, "say", "");
      label.title = r.text;
      this.lastSay = { t_ms: r.t_ms, label };
    }
    const span = element("span", "sentence", r.text);
    label.append(span);
    const item = this.note(r, `bot: “${r.text}”`);
    (this.sentences[r.turn_id] ||= []).push({ text: r.text, parts: [span, item] });
  }

  on_tool_started(r) {
    this.open[`tool:${r.call_id}`] = this.bar("tools", r.t_ms, "tool", r.name);
    this.note(r, `tool ${r.name} started`);
  }

  on_tool_finished(r) {
    this.close(this.open[`tool:${r.call_id}`], r.t_ms);
    this.note(r, `tool ${r.name} finished: ${r.outcome}`);
  }

  on_tool_cancelled(r) {
    const bar = this.open[`tool:${r.call_id}`];
    if (bar) bar.classList.add("cancelled");
    this.close(bar, r.t_ms);
    this.note(r, `tool ${r.name} cancelled`);
  }

  on_interruption(r) {
    // Latency from the caller's first word (onset) to the confirmed interruption (design §5).
    const latency = r.t_ms - r.onset_ms;
    this.close(this.bar("barge-in", r.onset_ms, "latency"), r.t_ms);
    this.lastInterruption = this.marker("barge-in", r.t_ms, "interruption", `barge-in ${latency} ms`);
    this.lastInterruption.dataset.onset = String(r.onset_ms);
    this.close(this.open.bot, r.t_ms);
    this.open.bot = null;
    this.note(r, `barge-in: confirmed ${latency} ms after the caller's onset`);
  }

  on_flush_sent(r) {
    this.droppedMs += r.dropped_ms || 0;
    const onset = this.lastInterruption ? Number(this.lastInterruption.dataset.onset) : r.t_ms;
    const latency = r.t_ms - onset;
    if (this.lastInterruption) this.lastInterruption.textContent += ` · flush ${latency} ms`;
    this.note(r, `flush (${r.verb}) sent ${latency} ms after onset: playback dropped`);
  }

  on_turn_cancelled(r) {
    this.note(r, `turn ${r.turn_id} cancelled`);
  }

  on_heard(r) {
    const how = r.interrupted ? "interrupted; heard" : "heard";
    this.note(r, `${r.turn_id} ${how}: “${r.text}”`);
    // Sentences of the turn the caller heard none of (generated, never played): struck.
    for (const sentence of this.sentences[r.turn_id] || []) {
      if (heardAny(sentence.text, r.text)) continue;
      for (const part of sentence.parts) {
        part.classList.add("not-heard");
        part.title = "not heard";
      }
    }
    delete this.sentences[r.turn_id];
  }

  on_dtmf(r) {
    this.label("caller", r.t_ms, "dtmf", `key ${r.digit}`);
    this.note(r, `key ${r.digit}`);
  }

  // The call is over: close what is still open at its last moment; the axis stops there
  // and the view stops following, so the lanes can be read at leisure.
  end() {
    if (this.ended) return;
    this.tick(this.endMs);
    for (const bar of Object.values(this.open)) this.close(bar, this.endMs);
    this.open = {};
    this.ended = true;
  }

  // Grow the open bars to "now" and keep the newest moment in view (until the call ends).
  tick(nowMs) {
    if (this.ended) return;
    this.endMs = Math.max(this.endMs, nowMs);
    for (const bar of Object.values(this.open)) {
      if (bar && !bar.classList.contains("closed")) this.grow(bar, nowMs);
    }
    const { scrollLeft, clientWidth, scrollWidth } = this.scroller;
    const following = scrollLeft + clientWidth >= scrollWidth - 60;
    this.area.style.width = `calc(var(--label-width) + ${(this.endMs / 1000 + 2) * PX_PER_S}px)`;
    while (this.seconds <= this.endMs / 1000 + 1) {
      this.marker("time", this.seconds * 1000, "tick", `${this.seconds} s`);
      this.seconds += 1;
    }
    if (following) this.scroller.scrollLeft = this.scroller.scrollWidth;
  }
}

// Whether the caller heard any of `sentence`: its first words are in what they heard (a
// sentence cut by a flush is heard in part, docs/timeline.md `heard`).
function heardAny(sentence, heard) {
  const words = (text) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) || [];
  const said = words(sentence);
  if (said.length === 0) return true;
  const got = ` ${words(heard).join(" ")} `;
  return got.includes(` ${said.slice(0, Math.min(2, said.length)).join(" ")} `);
}

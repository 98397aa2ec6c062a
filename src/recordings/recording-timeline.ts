import { FRAME_MS, MULAW_FRAME_BYTES } from '../audio/frames.js';
import { decodeMulaw } from '../audio/mulaw.js';

/**
 * Frames waiting to be written, each with its slot on the timeline (slot n starts at n * 20 ms).
 * Kept in preallocated arrays, so recording a frame copies 160 bytes and allocates nothing.
 */
class FrameQueue {
  private bytes: Uint8Array;
  private slots: Int32Array;
  count = 0;

  constructor(capacityFrames: number) {
    this.bytes = new Uint8Array(capacityFrames * MULAW_FRAME_BYTES);
    this.slots = new Int32Array(capacityFrames);
  }

  push(slot: number, frame: Uint8Array): void {
    if (this.count === this.slots.length) this.grow();
    const length = Math.min(frame.length, MULAW_FRAME_BYTES);
    const offset = this.count * MULAW_FRAME_BYTES;
    this.bytes.set(length === frame.length ? frame : frame.subarray(0, length), offset);
    // A short frame is padded with silence (0xff is mu-law zero).
    if (length < MULAW_FRAME_BYTES) this.bytes.fill(0xff, offset + length, offset + MULAW_FRAME_BYTES);
    this.slots[this.count] = slot;
    this.count += 1;
  }

  slotAt(index: number): number {
    return this.slots[index]!;
  }

  frameAt(index: number): Uint8Array {
    return this.bytes.subarray(index * MULAW_FRAME_BYTES, (index + 1) * MULAW_FRAME_BYTES);
  }

  /** Drops every frame from the first whose slot is >= `slot` (slots only grow). */
  truncateFrom(slot: number): void {
    let keep = this.count;
    while (keep > 0 && this.slots[keep - 1]! >= slot) keep -= 1;
    this.count = keep;
  }

  /**
   * Moves the frames of the queue's last contiguous run up to `by` slots earlier, never onto the
   * frame before the run nor before `floorSlot`. Returns how many slots it moved them.
   */
  pullBackLastRun(by: number, floorSlot: number): number {
    if (this.count === 0) return 0;
    let first = this.count - 1;
    while (first > 0 && this.slots[first - 1] === this.slots[first]! - 1) first -= 1;
    const floor = Math.max(floorSlot, first > 0 ? this.slots[first - 1]! + 1 : floorSlot);
    const moved = Math.min(by, this.slots[first]! - floor);
    if (moved <= 0) return 0;
    for (let i = first; i < this.count; i++) this.slots[i]! -= moved;
    return moved;
  }

  /** Removes the first `n` frames. */
  shift(n: number): void {
    if (n <= 0) return;
    this.bytes.copyWithin(0, n * MULAW_FRAME_BYTES, this.count * MULAW_FRAME_BYTES);
    this.slots.copyWithin(0, n, this.count);
    this.count -= n;
  }

  private grow(): void {
    const bytes = new Uint8Array(this.bytes.length * 2);
    bytes.set(this.bytes);
    const slots = new Int32Array(this.slots.length * 2);
    slots.set(this.slots);
    this.bytes = bytes;
    this.slots = slots;
  }
}

/** How long caller frames due but not read yet are waited for, by default (see maxHoldbackMs). */
export const MAX_HOLDBACK_MS = 3000;

/** Linear PCM for one stretch of the timeline, one array per file. */
export interface TimelineChunk {
  caller: Int16Array;
  bot: Int16Array;
  mixed: Int16Array;
}

export interface TimelineOptions {
  /**
   * A caller frame arriving this much later than the next free slot starts a new stretch at its
   * arrival time (silence in between); smaller gaps are network jitter and are closed up.
   */
  callerGapMs?: number;
  /** Frames newer than this stay in memory, so jittery caller frames and clears can still land. */
  holdbackMs?: number;
  /**
   * How long the timeline waits for caller frames that are due but not read yet (this process or
   * the network stalled), so they land where they were spoken; beyond it a silent caller (a muted
   * room member) no longer holds the bot's audio back.
   */
  maxHoldbackMs?: number;
  /** Initial queue size per track; queues grow if a flush is late. */
  capacityFrames?: number;
}

/**
 * Places a call's caller frames and bot frames on one timeline by the time they happened, so a
 * stretch where nobody spoke is silence, and turns settled stretches into PCM for the files.
 *
 * - Caller frames are contiguous from the carrier; they take the next slot unless they arrive
 *   well after it (a muted room member, a dropped stream), then they start at their arrival. A
 *   frame never lands after its arrival: a backlog read at once ends where it arrived.
 * - Bot frames play one after another at the far end from when they are sent, like a carrier's
 *   buffer: slot = max(send time, end of the previous bot frame).
 * - A clear drops the bot frames not yet played at its time, as the far end does.
 *
 * Times are ms since the recording started.
 */
export class RecordingTimeline {
  private readonly callerGapSlots: number;
  private readonly holdbackSlots: number;
  private readonly maxHoldbackSlots: number;
  private readonly caller: FrameQueue;
  private readonly bot: FrameQueue;
  private nextCallerSlot = 0;
  private nextBotSlot = 0;
  /** Every slot before this one has been handed out as PCM. */
  private committedSlot = 0;
  private readonly callerPcm = new Int16Array(MULAW_FRAME_BYTES);
  private readonly botPcm = new Int16Array(MULAW_FRAME_BYTES);

  constructor(options: TimelineOptions = {}) {
    this.callerGapSlots = Math.round((options.callerGapMs ?? 100) / FRAME_MS);
    this.holdbackSlots = Math.ceil((options.holdbackMs ?? 200) / FRAME_MS);
    this.maxHoldbackSlots = Math.max(
      this.holdbackSlots,
      Math.ceil((options.maxHoldbackMs ?? MAX_HOLDBACK_MS) / FRAME_MS),
    );
    const capacity = options.capacityFrames ?? 64;
    this.caller = new FrameQueue(capacity);
    this.bot = new FrameQueue(capacity);
  }

  /** Ms of timeline already handed out. */
  get committedMs(): number {
    return this.committedSlot * FRAME_MS;
  }

  addCaller(frame: Uint8Array, atMs: number): void {
    const arrivalSlot = Math.floor(atMs / FRAME_MS);
    let slot = this.nextCallerSlot;
    if (arrivalSlot > slot + this.callerGapSlots) slot = arrivalSlot;
    // Nobody is heard before they arrive. Frames read faster than real time are a backlog (the
    // network, or this process, held them up and they came at once): they were spoken before
    // now, so the run they end moves back into the silence before it, as far as what is already
    // written allows. Otherwise a stall would push every later caller frame late for good.
    if (slot > arrivalSlot) slot -= this.caller.pullBackLastRun(slot - arrivalSlot, this.committedSlot);
    // Later than the holdback allows: keep it, slightly late, rather than lose speech.
    if (slot < this.committedSlot) slot = this.committedSlot;
    this.caller.push(slot, frame);
    this.nextCallerSlot = slot + 1;
  }

  addBot(frame: Uint8Array, atMs: number): void {
    const slot = Math.max(Math.round(atMs / FRAME_MS), this.nextBotSlot, this.committedSlot);
    this.bot.push(slot, frame);
    this.nextBotSlot = slot + 1;
  }

  /** The far end dropped what it had not played yet. */
  clearBot(atMs: number): void {
    const slot = Math.max(Math.round(atMs / FRAME_MS), this.committedSlot);
    this.bot.truncateFrom(slot);
    this.nextBotSlot = Math.min(this.nextBotSlot, slot);
  }

  /** PCM for every slot old enough to be settled at `nowMs`, or undefined when there is none yet. */
  drain(nowMs: number): TimelineChunk | undefined {
    const nowSlot = Math.floor(nowMs / FRAME_MS);
    // Not past the caller's last frame: the next ones may be on their way (up to the maximum).
    const settled = Math.min(nowSlot - this.holdbackSlots, this.nextCallerSlot);
    return this.commitUntil(Math.max(settled, nowSlot - this.maxHoldbackSlots));
  }

  /**
   * PCM up to `endMs` (the call ended): the caller's frames all count, the bot's frames after
   * `endMs` were never heard.
   */
  drainAll(endMs: number): TimelineChunk | undefined {
    const endSlot = Math.max(Math.ceil(endMs / FRAME_MS), this.nextCallerSlot);
    this.bot.truncateFrom(Math.ceil(endMs / FRAME_MS));
    return this.commitUntil(endSlot);
  }

  private commitUntil(endSlot: number): TimelineChunk | undefined {
    const slots = endSlot - this.committedSlot;
    if (slots <= 0) return undefined;
    const samples = slots * MULAW_FRAME_BYTES;
    // Fresh arrays: the writer keeps them until the disk has them.
    const chunk: TimelineChunk = {
      caller: new Int16Array(samples),
      bot: new Int16Array(samples),
      mixed: new Int16Array(samples),
    };
    const usedCaller = this.place(this.caller, endSlot, chunk.caller, this.callerPcm);
    const usedBot = this.place(this.bot, endSlot, chunk.bot, this.botPcm);
    this.caller.shift(usedCaller);
    this.bot.shift(usedBot);
    const { caller, bot, mixed } = chunk;
    for (let i = 0; i < samples; i++) {
      const sum = caller[i]! + bot[i]!;
      mixed[i] = sum > 32767 ? 32767 : Math.max(sum, -32768);
    }
    this.committedSlot = endSlot;
    return chunk;
  }

  /** Decodes the queue's frames before `endSlot` into `out`; returns how many it consumed. */
  private place(queue: FrameQueue, endSlot: number, out: Int16Array, scratch: Int16Array): number {
    let used = 0;
    while (used < queue.count && queue.slotAt(used) < endSlot) {
      const offset = (queue.slotAt(used) - this.committedSlot) * MULAW_FRAME_BYTES;
      if (offset >= 0) out.set(decodeMulaw(queue.frameAt(used), scratch), offset);
      used += 1;
    }
    return used;
  }
}

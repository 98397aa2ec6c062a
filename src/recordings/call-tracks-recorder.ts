import type { Logger } from 'pino';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../audio/frames.js';
import { MAX_HOLDBACK_MS, RecordingTimeline, type TimelineChunk } from './recording-timeline.js';
import { WavFileWriter } from './wav-file-writer.js';

export const RECORDING_TRACKS = ['caller', 'bot', 'mixed'] as const;
export type RecordingTrack = (typeof RECORDING_TRACKS)[number];

/** What a finished recorder hands back: the samples each file holds. */
export interface RecorderResult {
  samplesByTrack: Record<RecordingTrack, number>;
  /** Set when a file could not be written completely; what was written is still valid. */
  error?: Error;
}

export interface CallRecorderOptions {
  /** The recording's id (its row's), for whoever needs to link to it. */
  recordingId?: string;
  /** Where each track's WAV goes; the directory must exist. */
  paths: Record<RecordingTrack, string>;
  log: Logger;
  /** Called once, after the files are closed. Errors are logged, never thrown into the call. */
  onFinished(result: RecorderResult): Promise<void>;
  /** Called when the session's name is known (a carrier's call sid arrives after the socket). */
  onRoomName?(name: string): void;
  /** Monotonic clock in ms. */
  now?: () => number;
  /**
   * The recording's time zero on that clock: when the conversation began, which may be before the
   * recorder was made (a carrier's stream opens while the call is being set up, and the audio it
   * sent meanwhile is handed over at once). Defaults to the clock at construction.
   */
  startedAtMs?: number;
  /** How often settled audio is handed to the files. */
  flushIntervalMs?: number;
}

/**
 * Records one conversation as three 8 kHz 16-bit WAV files: the caller, the bot, and both mixed,
 * on one timeline. The frame methods only copy the frame into a queue; a timer turns settled
 * stretches into PCM every `flushIntervalMs` and the files are written with async fs in the
 * background, so the 20 ms path never waits on the disk.
 *
 * Usable by any transport: call `callerFrame` for each 20 ms mu-law frame heard from the caller
 * (or the room's mix), `botFrame` for each frame the bot sends, `botClear` when queued bot audio is
 * dropped, and `finish` when the conversation ends. Times default to now.
 */
export class CallRecorder {
  private readonly timeline = new RecordingTimeline();
  private readonly writers: Record<RecordingTrack, WavFileWriter>;
  private readonly now: () => number;
  private readonly startMs: number;
  private readonly timer: NodeJS.Timeout;
  private finishing: Promise<void> | undefined;

  /** The recording's id, when the recordings service made it. */
  get recordingId(): string | undefined {
    return this.options.recordingId;
  }

  constructor(private readonly options: CallRecorderOptions) {
    this.now = options.now ?? (() => performance.now());
    this.startMs = Math.min(options.startedAtMs ?? Number.POSITIVE_INFINITY, this.now());
    this.writers = {
      caller: new WavFileWriter(options.paths.caller, TELEPHONY_SAMPLE_RATE_HZ),
      bot: new WavFileWriter(options.paths.bot, TELEPHONY_SAMPLE_RATE_HZ),
      mixed: new WavFileWriter(options.paths.mixed, TELEPHONY_SAMPLE_RATE_HZ),
    };
    this.timer = setInterval(() => this.flush(), options.flushIntervalMs ?? 500);
    this.timer.unref();
  }

  /** Ms since the recording started, on the recorder's clock. */
  elapsedMs(): number {
    return this.now() - this.startMs;
  }

  get finished(): boolean {
    return this.finishing !== undefined;
  }

  /**
   * Where a caller frame goes on the recording: when the caller spoke it, by the stream's own
   * timestamp (the recording starts with the stream), so a frame read late (held during set-up,
   * or behind a stall of this process or the network) lands where it was spoken. A timestamp that
   * says the frame is from the future, or from long before anything still held, is not believed:
   * the frame goes where it arrived.
   */
  callerFrameTimeMs(streamTimestampMs: number | undefined): number {
    const nowMs = this.elapsedMs();
    if (streamTimestampMs === undefined || streamTimestampMs > nowMs) return nowMs;
    return streamTimestampMs < nowMs - MAX_HOLDBACK_MS ? nowMs : streamTimestampMs;
  }

  /** One 20 ms mu-law frame from the caller. The buffer may be reused after the call returns. */
  callerFrame(mulaw: Uint8Array, atMs = this.elapsedMs()): void {
    if (this.finishing) return;
    // Transports lend their frames (see CallTransport): the timeline keeps a copy.
    this.timeline.addCaller(mulaw.slice(), atMs);
  }

  /** One 20 ms mu-law frame of the bot, at the time it was sent. */
  botFrame(mulaw: Uint8Array, atMs = this.elapsedMs()): void {
    if (this.finishing) return;
    this.timeline.addBot(mulaw.slice(), atMs);
  }

  /** The bot's queued audio was dropped (barge-in): what had not played is not in the recording. */
  botClear(atMs = this.elapsedMs()): void {
    if (this.finishing) return;
    this.timeline.clearBot(atMs);
  }

  setRoomName(name: string): void {
    this.options.onRoomName?.(name);
  }

  /** Writes what remains, fixes the headers and reports. Safe to call more than once. */
  finish(): Promise<void> {
    this.finishing ??= this.close();
    return this.finishing;
  }

  /** Hands settled audio to the files; runs on the timer, and may be called to flush early. */
  flush(): void {
    if (this.finishing) return;
    this.write(this.timeline.drain(this.elapsedMs()));
  }

  /** Resolves once everything flushed so far has been written (for tools and tests). */
  async settled(): Promise<void> {
    await Promise.all(RECORDING_TRACKS.map((track) => this.writers[track].settled()));
  }

  private write(chunk: TimelineChunk | undefined): void {
    if (!chunk) return;
    for (const track of RECORDING_TRACKS) this.writers[track].append(chunk[track]);
  }

  private async close(): Promise<void> {
    clearInterval(this.timer);
    this.write(this.timeline.drainAll(this.elapsedMs()));
    const samplesByTrack = { caller: 0, bot: 0, mixed: 0 };
    let error: Error | undefined;
    for (const track of RECORDING_TRACKS) {
      try {
        samplesByTrack[track] = (await this.writers[track].finish()) / 2;
      } catch (err) {
        error ??= err as Error;
        samplesByTrack[track] = this.writers[track].sampleCount;
      }
    }
    if (error) this.options.log.error({ err: error }, 'recording file write failed');
    try {
      await this.options.onFinished(error ? { samplesByTrack, error } : { samplesByTrack });
    } catch (err) {
      this.options.log.error({ err }, 'could not store the finished recording');
    }
  }
}

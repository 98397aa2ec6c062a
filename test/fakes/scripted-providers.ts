import { encodeMulaw } from '../../src/audio/mulaw.js';
import {
  type LlmDelta,
  type LlmProvider,
  type LlmRequest,
  type ProviderContext,
  ProviderError,
  type SttEvent,
  type SttProvider,
  type SttStream,
  type TtsOutput,
  type TtsProvider,
} from '../../src/providers/types.js';
import { type AudioFormat, MULAW_8K } from '../../src/audio/audio-format.js';
import { type Clock, REAL_CLOCK } from '../../src/shared/clock.js';

/** Resolves after `ms`, or at once when the signal aborts; leaves no listener behind. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * An STT that "hears" the next line of its script whenever the pipeline asks it to finalise
 * (VAD saw the caller stop). Real VAD on real recorded speech decides when that happens.
 */
export class ScriptedStt implements SttProvider {
  readonly name = 'scripted_stt';
  readonly inputFormat: AudioFormat = MULAW_8K;
  bytesReceived = 0;
  finalizeCalls = 0;
  closed = 0;
  private next = 0;

  constructor(
    private readonly lines: string[],
    private readonly finalDelayMs = 30,
    /** Reports a lost connection (for good) this long after opening. */
    private readonly failAfterMs?: number,
  ) {}

  async open(_ctx: ProviderContext, onEvent: (event: SttEvent) => void): Promise<SttStream> {
    if (this.failAfterMs !== undefined) {
      setTimeout(
        () => onEvent({ type: 'error', error: new ProviderError('scripted_stt', 'reconnection failed', true) }),
        this.failAfterMs,
      );
    }
    return {
      write: (audio) => {
        this.bytesReceived += audio.length;
      },
      finalize: () => {
        this.finalizeCalls += 1;
        const text = this.lines[this.next++] ?? '';
        setTimeout(() => onEvent({ type: 'final', text, speechFinal: true }), this.finalDelayMs);
      },
      close: async () => {
        this.closed += 1;
      },
    };
  }
}

/** A scripted answer that calls functions: its text (if any), then one tool-call delta per call. */
export interface ScriptedToolTurn {
  text?: string;
  calls: Array<{ name: string; arguments: Record<string, unknown>; id?: string }>;
}

export interface ScriptedLlmOptions {
  /** Reply per call (text, or text and function calls); the last repeats. */
  replies: Array<string | ScriptedToolTurn>;
  firstTokenMs?: number;
  tokenMs?: number;
  /** Throw after this many tokens on the given (1-based) request; retryable unless said otherwise. */
  failOnRequest?: { request: number; afterTokens: number; retryable?: boolean };
}

/** An LLM with fixed replies that records every request it gets. */
export class ScriptedLlm implements LlmProvider {
  readonly name = 'scripted_llm';
  readonly requests: LlmRequest[] = [];
  aborted = 0;

  constructor(private readonly options: ScriptedLlmOptions) {}

  async *complete(request: LlmRequest, ctx: ProviderContext): AsyncIterable<LlmDelta> {
    this.requests.push(structuredClone(request));
    const n = this.requests.length;
    const scripted = this.options.replies[Math.min(n - 1, this.options.replies.length - 1)] ?? '';
    const text = typeof scripted === 'string' ? scripted : (scripted.text ?? '');
    await sleep(this.options.firstTokenMs ?? 20, ctx.signal);
    let tokens = 0;
    for (const word of text.split(/(?<= )/)) {
      if (ctx.signal.aborted) {
        this.aborted += 1;
        return;
      }
      if (this.options.failOnRequest?.request === n && tokens >= this.options.failOnRequest.afterTokens) {
        throw new ProviderError('scripted_llm', 'scripted failure', this.options.failOnRequest.retryable ?? true);
      }
      if (word === '') continue;
      yield { type: 'text', text: word };
      tokens += 1;
      await sleep(this.options.tokenMs ?? 5, ctx.signal);
    }
    if (typeof scripted === 'string' || ctx.signal.aborted) return;
    for (const [i, call] of scripted.calls.entries()) {
      yield {
        type: 'tool-call',
        id: call.id ?? `call_${n}_${i + 1}`,
        name: call.name,
        argumentsJson: JSON.stringify(call.arguments),
      };
    }
  }
}

export interface ToneTtsPacing {
  /**
   * Deliver audio at about real time (one 100 ms chunk ahead), as streaming vendors do, instead
   * of as fast as possible: the sentence being spoken is then still being synthesised.
   */
  realTime?: boolean;
  /** Whose real time: the call's clock when the call runs on a scaled one (wall time by default). */
  clock?: Clock;
  /** Take the text and never answer: no audio, no error, until the reply is aborted (a hung vendor). */
  hangs?: boolean;
}

/**
 * A TTS that speaks each piece as a steady tone, `msPerChar` long per character, delivered in
 * 100 ms chunks (faster than real time unless paced), then says which text it completed.
 */
export class ToneTts implements TtsProvider {
  readonly name = 'tone_tts';
  readonly outputFormat: AudioFormat = MULAW_8K;
  readonly pieces: string[] = [];
  cancelled = 0;
  syntheses = 0;
  warmUps = 0;
  closes = 0;

  constructor(
    private readonly msPerChar = 40,
    private readonly firstByteMs = 20,
    private readonly failAfterPieces?: number,
    /** The first this-many syntheses read one piece, then fail with a retryable error, before any audio. */
    private readonly dropFirstSyntheses = 0,
    private readonly pacing: ToneTtsPacing = {},
  ) {}

  warmUp(): void {
    this.warmUps += 1;
  }

  close(): void {
    this.closes += 1;
  }

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    this.syntheses += 1;
    const drop = this.syntheses <= this.dropFirstSyntheses;
    const clock = this.pacing.clock ?? REAL_CLOCK;
    let clockStartMs: number | undefined;
    let producedMs = 0;
    for await (const piece of text) {
      if (drop) throw new ProviderError('tone_tts', 'connection dropped', true);
      if (this.pacing.hangs) {
        this.pieces.push(piece);
        await sleep(3_600_000, ctx.signal);
        return;
      }
      if (this.failAfterPieces !== undefined && this.pieces.length >= this.failAfterPieces) {
        throw new ProviderError('tone_tts', 'scripted failure');
      }
      this.pieces.push(piece);
      await sleep(this.firstByteMs, ctx.signal);
      const totalMs = Math.max(100, piece.length * this.msPerChar);
      for (let doneMs = 0; doneMs < totalMs; doneMs += 100) {
        if (ctx.signal.aborted) {
          this.cancelled += 1;
          return;
        }
        const chunkMs = Math.min(100, totalMs - doneMs);
        clockStartMs ??= clock.now();
        yield { type: 'audio', audio: tone(chunkMs) };
        producedMs += chunkMs;
        // Real time: the audio produced stays one chunk ahead of the call's clock.
        const waitMs = this.pacing.realTime ? (clockStartMs + producedMs - 100 - clock.now()) / clock.speed : 5;
        await sleep(Math.max(0, waitMs), ctx.signal);
      }
      yield { type: 'spoken', text: piece };
    }
  }
}

/** mu-law 440 Hz at a moderate level: clearly not silence for the simulator's recorder. */
export function tone(durationMs: number): Uint8Array {
  const samples = new Int16Array(durationMs * 8);
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return encodeMulaw(samples);
}

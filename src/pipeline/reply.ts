import type { CallEvents } from './call-deps.js';
import type { Clock } from '../shared/clock.js';
import { type CallMetrics, type TurnTimings, elapsedSince } from './call-metrics.js';
import type { Conversation } from './conversation.js';
import type { Playout } from './playout.js';

/**
 * Why a reply ended:
 * - `played`: the carrier played all of it;
 * - `interrupted`: the caller spoke or pressed a key over it (barge-in), or a newer reply replaced it;
 * - `deadline`: it gave the caller nothing within the turn deadline and is abandoned;
 * - `failed`: its model or voice failed for good and nothing more of it will come.
 */
export type ReplyEndCause = 'played' | 'interrupted' | 'deadline' | 'failed';

/** What a reply tells about itself as it lives, to whoever must follow "is the bot talking". */
export interface ReplyParts {
  playout: Playout;
  conversation: Conversation | undefined;
  metrics: CallMetrics;
  events?: CallEvents;
  /** The turn controller: barge-in is only decided while a reply lives. */
  turns: { setBotSpeaking(speaking: boolean): void };
  /** The reply is over (any cause): the session forgets it and acts on the cause. */
  onEnded(reply: Reply, cause: ReplyEndCause, ended: ReplyEnded): void;
}

/** What the caller heard of a reply that was cut off. */
export interface ReplyEnded {
  heardMs: number;
  sentMs: number;
  /** A `clear` went to the carrier. */
  clearSent: boolean;
  /** The reply's text as the context keeps it. */
  keptText: string;
}

export interface ReplyInit {
  kind: TurnTimings['kind'];
  turn: number;
  /** When the wait the reply answers began (the end of the caller's turn, or now), on the call's clock, ms. */
  originMs: number;
  /** The goodbye (or the apology after a fatal error): the call ends once it has played. */
  endsCall: boolean;
}

/**
 * One reply of the bot, from the decision to answer to its last frame heard or its cut: the only
 * holder of "the bot is talking". Creating it opens a Playout generation and the assistant message
 * in the context and tells the turn controller; `end(cause)` is the only way it stops, and does
 * every step for every cause (abort the model and voice, clear the carrier, cut the context to
 * what was heard, the speaking events). Function calls of the reply hang here too: they stop with
 * its abort signal, unless they outlive it on purpose.
 */
export class Reply {
  readonly generation: number;
  readonly abort = new AbortController();
  readonly timings: TurnTimings;
  readonly originMs: number;
  private endsCallValue: boolean;
  /** Audio produced so far, ms (8 bytes of mu-law per ms). */
  audioMs = 0;
  private cause: ReplyEndCause | undefined;
  /** The first frame went out and `onBotSpeaking(true)` was told. */
  private audible = false;

  constructor(
    private readonly parts: ReplyParts,
    init: ReplyInit,
  ) {
    this.generation = parts.playout.startReply();
    parts.conversation?.beginReply();
    this.originMs = init.originMs;
    this.endsCallValue = init.endsCall;
    this.timings = { turn: init.turn, kind: init.kind, interrupted: false };
    parts.metrics.turns.push(this.timings);
    parts.turns.setBotSpeaking(true);
  }

  /** The call ends once this reply has played (a goodbye, an apology after a fatal error, `end_call`). */
  get endsCall(): boolean {
    return this.endsCallValue;
  }

  /** The model decided the call is over (end_call): it ends when this reply has played. */
  markEndsCall(): void {
    this.endsCallValue = true;
  }

  /** The call's clock, which `originMs` and the timings are on. */
  get clock(): Clock {
    return this.parts.metrics.clock;
  }

  /** The reply has ended (and why), or undefined while it lives. */
  get endedBy(): ReplyEndCause | undefined {
    return this.cause;
  }

  get live(): boolean {
    return this.cause === undefined;
  }

  /** Audio of this reply to send; dropped once the reply ended (Playout drops stale generations). */
  enqueue(mulaw: Uint8Array): void {
    this.audioMs += mulaw.length / 8;
    this.parts.playout.enqueue(this.generation, mulaw);
  }

  /** No more audio will come: the reply ends `played` once the carrier has played what it got. */
  finishAudio(): void {
    this.parts.playout.endReply(this.generation);
  }

  /** Playout sent the reply's first frame. */
  onFirstFrame(): void {
    if (!this.live || this.audible) return;
    this.audible = true;
    this.timings.firstFrameSentMs = elapsedSince(this.clock, this.originMs);
    this.parts.events?.onBotSpeaking?.(true);
    if (this.timings.kind === 'answer') this.parts.events?.onTurnLatency?.(this.timings.firstFrameSentMs);
  }

  /**
   * Ends the reply, once: aborts what still produces it, and for any cause but `played` drops its
   * audio (a `clear` to the carrier when some may be playing) and cuts the context to what the
   * caller heard. Returns what was heard, or undefined when it had already ended.
   */
  end(cause: ReplyEndCause): ReplyEnded | undefined {
    if (!this.live) return undefined;
    this.cause = cause;
    this.abort.abort();
    const { playout, conversation } = this.parts;
    let ended: ReplyEnded;
    if (cause === 'played') {
      conversation?.endReply();
      ended = { heardMs: this.audioMs, sentMs: this.audioMs, clearSent: false, keptText: '' };
    } else {
      const cleared = playout.generation === this.generation ? playout.clear() : undefined;
      const heardMs = cleared?.heardMs ?? 0;
      const keptText = conversation?.truncateReply(heardMs, this.audioMs) ?? '';
      ended = { heardMs, sentMs: cleared?.sentMs ?? 0, clearSent: cleared?.cleared ?? false, keptText };
      if (cause === 'interrupted') {
        this.timings.interrupted = true;
        this.parts.metrics.bargeIns += 1;
      }
    }
    this.parts.turns.setBotSpeaking(false);
    if (this.audible || cause === 'interrupted') this.parts.events?.onBotSpeaking?.(false);
    this.parts.onEnded(this, cause, ended);
    return ended;
  }
}

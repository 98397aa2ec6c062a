/**
 * What one simulated call measured. All times are ms relative to the moment the `start` message
 * was sent (stream start); set-up steps before it are negative (when the stream never started,
 * times count from run() instead). Caller events are stamped when
 * their frame was sent, bot events when the message arrived, so latencies are what a server
 * would see on its own socket plus the (local) network.
 */

export type TimelineKind =
  | 'webhook-answered'
  | 'ws-open'
  | 'connected-sent'
  | 'start-sent'
  | 'caller-audio-start'
  | 'caller-voice-start'
  | 'caller-voice-end'
  | 'caller-audio-end'
  | 'bot-audio-start'
  | 'bot-audio-end'
  | 'mark-received'
  | 'mark-echoed'
  | 'clear-received'
  | 'dtmf-sent'
  /** The bot pressed a key: its tones were in the audio the caller heard. */
  | 'dtmf-heard'
  /** The server signalled a function call of the bot (a `tool:<name>:<phase>` mark): detail `<name> started` or `<name> ok`. */
  | 'tool-call'
  | 'wait-timeout'
  | 'violation'
  | 'hangup'
  | 'stop-sent'
  | 'socket-closed'
  | 'error';

export interface TimelineEvent {
  atMs: number;
  kind: TimelineKind;
  detail?: string;
}

export type ViolationKind =
  /** Binary WebSocket frame (Twilio warning 31950). */
  | 'binary-frame'
  | 'invalid-json'
  /** An event other than media, mark, clear (warning 31951). */
  | 'unknown-event'
  /** A known event that fails the outbound schema: missing or extra fields (warning 31951). */
  | 'invalid-message'
  | 'wrong-stream-sid'
  /** Sent before the stream's `start` went out, so there was no streamSid to address yet. */
  | 'before-start'
  /** A media payload that is not clean base64. */
  | 'invalid-base64'
  /** More than 10 minutes of audio buffered (warning 31931); the excess was discarded. */
  | 'buffer-overflow';

export interface ViolationSample {
  atMs: number;
  kind: ViolationKind;
  detail: string;
}

export type CallOutcome =
  /** The caller hung up: end of script, a hangup step, the duration limit, or hangup(). */
  | 'completed'
  /** The server closed the socket first. */
  | 'server-closed'
  /** The webhook or the WebSocket upgrade failed; no stream ran. */
  | 'connect-failed'
  /** The socket failed mid-call. */
  | 'error'
  /** The caller's AbortSignal fired. */
  | 'aborted';

export interface UtteranceMetrics {
  clip: string;
  startMs: number;
  /** When the clip's last frame was sent; null when the call ended mid-clip. */
  endMs: number | null;
  /** Send times of the first and last voiced frame; null for a clip without speech. */
  firstVoicedMs: number | null;
  lastVoicedMs: number | null;
  /**
   * Where the first voiced frame starts on the caller's audio clock (ms of audio sent since the
   * stream's first frame, its media timestamp): the server's VAD times are on that clock, free of
   * either side's scheduling.
   */
  firstVoicedAudioMs: number | null;
  /** Where the clip's first frame starts on that clock (its leading quiet may already be heard as speech). */
  startAudioMs: number | null;
  /** The caller spoke while bot audio was playing. */
  bargeIn: boolean;
  /**
   * Barge-in latency: from the caller's voice overlapping bot audio (the later of the first voiced
   * frame and that audio's start) to the first `clear` received; null if the bot never cleared.
   */
  bargeInLatencyMs: number | null;
  /**
   * Reply latency: from the last voiced frame to the start of the first bot audio that began after
   * it (before the caller's next utterance); null when the bot did not reply.
   */
  replyLatencyMs: number | null;
}

export interface ClearMetrics {
  atMs: number;
  /**
   * Audio of the bot's speech in progress (since its segment began) that had played when the
   * clear came: what the caller heard of it, counted in frames, whatever the clocks did meanwhile.
   */
  playedAudioMs: number;
  /** Audio that was queued or playing and was dropped. */
  droppedAudioMs: number;
  /** Bot audio that arrived within the clear window after the clear (stale audio of a cancelled reply, usually). */
  lateAudioMs: number;
  /** How long after the clear the last such audio arrived; null if none did. */
  lastLateAudioAfterMs: number | null;
  /**
   * How long after the clear bot audio started again within the clear window: the server paused
   * on suspected speech and resumed the reply (or, with no resume intended, sent stale audio).
   */
  resumedAfterMs: number | null;
}

export interface CallMetrics {
  /** From stream start to the first bot media message. */
  firstBotAudioMs: number | null;
  utterances: UtteranceMetrics[];
  /** The non-null reply and barge-in latencies, in utterance order. */
  replyLatenciesMs: number[];
  bargeInLatenciesMs: number[];
  clears: ClearMetrics[];
  /** The window after a clear in which arriving audio counts as late. */
  clearWindowMs: number;
  bot: {
    /** Runs of bot audio separated by more than the segment gap (or by a clear). */
    segments: number;
    receivedAudioMs: number;
    playedAudioMs: number;
    /** The emulated playout ran dry mid-segment: the caller heard a gap. */
    underruns: number;
    underrunTotalMs: number;
    longestUnderrunMs: number;
    /** Ticks that played less than a full 20 ms frame because the bot sent odd-sized chunks. */
    shortFrames: number;
    /** Keys the bot pressed (in-band DTMF tones heard in its audio), in order. */
    keysHeard: string;
  };
  marks: { received: number; echoed: number };
  /** The bot's function calls the server signalled: started, and ended by outcome (ok, error, timeout, cancelled). */
  tools: { started: number; byOutcome: Record<string, number>; byTool: Record<string, number> };
  caller: { framesSent: number; dtmfSent: number };
  violations: { total: number; byKind: Partial<Record<ViolationKind, number>>; samples: ViolationSample[] };
  /**
   * How late the simulator's own 20 ms clock woke up, at worst. Tens of ms mean this process is
   * overloaded (e.g. too many calls in one load tester) and its latencies are not to be trusted.
   */
  clockMaxLagMs: number;
}

export interface CallReport {
  callSid: string;
  streamSid: string;
  accountSid: string;
  /** The media stream dialled (from the TwiML when a webhook was used); null if the webhook failed. */
  wssUrl: string | null;
  customParameters: Record<string, string>;
  outcome: CallOutcome;
  /** Why the call ended, in words (hangup reason, close reason, or the connection error). */
  endReason: string;
  /** Webhook round trip and WebSocket upgrade, before the stream started. */
  setup: { webhookMs: number | null; connectMs: number | null };
  /** Stream start to end of call. */
  durationMs: number;
  /** The socket's close code and reason; null when it never opened. */
  close: { code: number; reason: string; by: 'caller' | 'server' } | null;
  timeline: TimelineEvent[];
  /** Events beyond the timeline's cap are counted, not kept. */
  timelineDropped: number;
  metrics: CallMetrics;
}

/** Raw per-call records the engine keeps; metrics are derived from them once, at the end. */
export interface UtteranceRecord {
  clip: string;
  startMs: number;
  endMs: number | null;
  firstVoicedMs: number | null;
  lastVoicedMs: number | null;
  firstVoicedAudioMs?: number | null;
  startAudioMs?: number;
}

export interface SegmentRecord {
  startMs: number;
  /** When the playout went idle for good (or the clear); null while still open. */
  endMs: number | null;
}

export interface ClearRecord {
  atMs: number;
  /** Bytes of the segment in progress the phone had played when the clear came. */
  playedBytes: number;
  droppedBytes: number;
  lateBytes: number;
  lastLateAfterMs: number | null;
  /** When bot audio started again within the clear window: a reply resumed after a false stop (or stale audio). */
  resumedAfterMs: number | null;
}

const MULAW_BYTES_PER_MS = 8;

/** Reply and barge-in latencies per utterance, from what was sent and received. */
export function utteranceMetrics(
  utterances: readonly UtteranceRecord[],
  segments: readonly SegmentRecord[],
  clears: readonly ClearRecord[],
): UtteranceMetrics[] {
  return utterances.map((u, i) => {
    // A bot reaction belongs to this utterance until the caller's next one starts speaking.
    let nextVoiceMs = Infinity;
    for (let j = i + 1; j < utterances.length; j++) {
      const next = utterances[j]!.firstVoicedMs;
      if (next !== null) {
        nextVoiceMs = next;
        break;
      }
    }
    let replyLatencyMs: number | null = null;
    let bargeIn = false;
    let bargeInLatencyMs: number | null = null;
    if (u.firstVoicedMs !== null && u.lastVoicedMs !== null) {
      const first = u.firstVoicedMs;
      const last = u.lastVoicedMs;
      const reply = segments.find((s) => s.startMs >= last && s.startMs < nextVoiceMs);
      if (reply) replyLatencyMs = reply.startMs - last;
      const overlapped = segments.find((s) => s.startMs < last && (s.endMs === null || s.endMs > first));
      if (overlapped) {
        bargeIn = true;
        const overlapStartMs = Math.max(first, overlapped.startMs);
        const clear = clears.find((c) => c.atMs >= overlapStartMs && c.atMs < nextVoiceMs);
        if (clear) bargeInLatencyMs = clear.atMs - overlapStartMs;
      }
    }
    return {
      clip: u.clip,
      startMs: round(u.startMs),
      endMs: u.endMs === null ? null : round(u.endMs),
      firstVoicedMs: u.firstVoicedMs === null ? null : round(u.firstVoicedMs),
      lastVoicedMs: u.lastVoicedMs === null ? null : round(u.lastVoicedMs),
      firstVoicedAudioMs: u.firstVoicedAudioMs ?? null,
      startAudioMs: u.startAudioMs ?? null,
      bargeIn,
      bargeInLatencyMs: bargeInLatencyMs === null ? null : round(bargeInLatencyMs),
      replyLatencyMs: replyLatencyMs === null ? null : round(replyLatencyMs),
    };
  });
}

export function clearMetrics(clears: readonly ClearRecord[]): ClearMetrics[] {
  return clears.map((c) => ({
    atMs: round(c.atMs),
    playedAudioMs: round(c.playedBytes / MULAW_BYTES_PER_MS),
    droppedAudioMs: round(c.droppedBytes / MULAW_BYTES_PER_MS),
    lateAudioMs: round(c.lateBytes / MULAW_BYTES_PER_MS),
    lastLateAudioAfterMs: c.lastLateAfterMs === null ? null : round(c.lastLateAfterMs),
    resumedAfterMs: c.resumedAfterMs === null ? null : round(c.resumedAfterMs),
  }));
}

/** Reports carry whole milliseconds: the clock ticks in 20 ms frames anyway. */
export function round(ms: number): number {
  return Math.round(ms);
}

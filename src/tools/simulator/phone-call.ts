import WebSocket, { type RawData } from 'ws';
import { FRAME_MS, MULAW_FRAME_BYTES, MULAW_SILENCE_BYTE } from '../../audio/frames.js';
import { BotAudioTracker } from './bot-audio-tracker.js';
import { type Clock, type ClockTimer, REAL_CLOCK } from '../../shared/clock.js';
import { type CallerClip, type PreparedClip, prepareClip } from './caller-clip.js';
import { CallerScript, type ScriptHost } from './caller-script.js';
import { CarrierMessages } from './carrier-messages.js';
import { DtmfDetector } from '../../audio/dtmf-tones.js';
import { CallRecorder } from './line-audio-recorder.js';
import {
  type CallMetrics,
  type CallOutcome,
  type CallReport,
  type TimelineEvent,
  type TimelineKind,
  type UtteranceRecord,
  type ViolationKind,
  type ViolationSample,
  clearMetrics,
  round,
  utteranceMetrics,
} from './call-report.js';
import { DEFAULT_MAX_DURATION_MS, type Scenario, clipsPlayedBy } from './scenario.js';
import { checkServerMessage } from './server-message.js';
import { twilioSid } from '../../telephony/twilio-sids.js';
import { fetchStreamInstruction, signatureFor } from './twiml-webhook.js';

/** Where to dial: the media stream itself, or the voice webhook whose TwiML names it. */
export type PhoneCallTarget = { wssUrl: string } | { webhookUrl: string };

export interface PhoneCallOptions {
  target: PhoneCallTarget;
  scenario: Scenario;
  /** Audio for the scenario's `play` steps, by clip name (see clip-file.ts to load files). */
  clips?: Record<string, CallerClip>;
  callSid?: string;
  streamSid?: string;
  accountSid?: string;
  from?: string;
  to?: string;
  /** `outbound-api` when the carrier plays a callee answering a call this service placed. */
  direction?: 'inbound' | 'outbound-api';
  /** Merged over the TwiML's <Parameter>s into start.customParameters. */
  customParameters?: Record<string, string>;
  /** Sign the webhook and the WebSocket upgrade (X-Twilio-Signature) with this auth token. */
  authToken?: string;
  /** Keep both tracks for WAV output (call.recording). Off by default: load tests skip it. */
  record?: boolean;
  /**
   * Awaited after the webhook's TwiML and before the media stream is opened. A real carrier
   * connects the stream hundreds of milliseconds to seconds after it fetched the TwiML; this plays
   * such a carrier (a test can hold the stream until something else has happened first).
   */
  beforeMediaStream?: () => Promise<void>;
  /** Webhook and WebSocket upgrade, each. Default 10 s. */
  connectTimeoutMs?: number;
  /** Bot silence longer than this ends a bot speech segment; shorter is an underrun. Default 500. */
  botSegmentGapMs?: number;
  /** Bot audio arriving within this after a clear counts as late. Default 500. */
  clearWindowMs?: number;
  /** Hangs up (outcome 'aborted'), or cancels dialling. */
  signal?: AbortSignal;
  /** Each timeline event as it happens (set-up events arrive together when the stream starts). */
  onEvent?: (event: TimelineEvent) => void;
  /** Timeline events kept; later ones are only counted. Default 20 000. */
  maxTimelineEvents?: number;
  /**
   * The time the call runs on (shared/clock.ts): caller frames go out every 20 ms of it, the bot's
   * audio plays at its rate, and the report's times are on it. Wall time by default; a scaled
   * clock only with a server on the same one (its Playout and audio rate limit read it too).
   */
  clock?: Clock;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_SEGMENT_GAP_MS = 500;
const DEFAULT_CLEAR_WINDOW_MS = 500;
const DEFAULT_MAX_TIMELINE_EVENTS = 20_000;
/** How long to wait for the server's close frame after our own, before dropping the socket. */
const CLOSE_GRACE_MS = 2_000;
/** Violations kept with their details; the rest are counted only. */
const MAX_VIOLATION_SAMPLES = 20;
const SILENCE_FRAME = new Uint8Array(MULAW_FRAME_BYTES).fill(MULAW_SILENCE_BYTE);
const SILENCE_PAYLOAD = Buffer.from(SILENCE_FRAME).toString('base64');

interface PlayingClip {
  name: string;
  clip: PreparedClip;
  nextFrame: number;
  utterance: UtteranceRecord;
}

/**
 * One phone call, played the way the carrier (Twilio Media Streams) plays it: webhook, stream
 * start, caller audio every 20 ms, emulated playout of the bot's audio with mark echoes and
 * clear, hang-up. `run()` resolves with the report once everything is closed; it never rejects
 * for network trouble (that is an outcome in the report), only for invalid options.
 *
 * One timer per call drives everything, rescheduled from an absolute start time so it does not
 * drift; per tick the only allocations are the outgoing JSON string and any incoming messages.
 */
export class PhoneCall {
  readonly callSid: string;
  readonly streamSid: string;
  readonly accountSid: string;
  /** Both tracks of the call when `record` was set; read it after run() resolves. */
  readonly recording: CallRecorder | null;

  private readonly options: PhoneCallOptions;
  private readonly clips: Map<string, PreparedClip>;
  private readonly messages: CarrierMessages;
  private readonly script: CallerScript;
  private readonly bot: BotAudioTracker;
  private readonly maxDurationMs: number;
  private readonly maxTimelineEvents: number;
  private readonly scriptHost: ScriptHost;

  private done: Promise<CallReport> | null = null;
  private resolveDone: (report: CallReport) => void = () => {};
  private socket: WebSocket | null = null;
  private wssUrl: string | null = null;
  private customParameters: Record<string, string> = {};

  /** The clock at run(), and at stream start (the report's zero) once it happened. */
  private originAt = 0;
  private streamStartAt: number | null = null;
  private webhookMs: number | null = null;
  private connectMs: number | null = null;
  private tickIndex = 0;
  private timer: ClockTimer | null = null;
  private readonly clock: Clock;
  private clockMaxLagMs = 0;

  private playing: PlayingClip | null = null;
  private readonly utterances: UtteranceRecord[] = [];
  private readonly botFrame = new Uint8Array(MULAW_FRAME_BYTES);
  private framesSent = 0;
  private dtmfSent = 0;
  /** Hears the keys the bot presses (send_dtmf plays their tones), as the called party's IVR would. */
  private readonly keyDetector = new DtmfDetector();
  private keysHeard = '';
  private marksReceived = 0;
  private readonly tools: CallMetrics['tools'] = { started: 0, byOutcome: {}, byTool: {} };
  private marksEchoed = 0;

  private readonly timeline: TimelineEvent[] = [];
  private timelineDropped = 0;
  private readonly violationCounts: Partial<Record<ViolationKind, number>> = {};
  private readonly violationSamples: ViolationSample[] = [];
  private violationTotal = 0;
  private overflowReported = false;

  /** Set once the call is ending; the first reason wins. */
  private ending: { outcome: CallOutcome; reason: string } | null = null;
  private closeInfo: CallReport['close'] = null;
  private finished = false;

  constructor(options: PhoneCallOptions) {
    this.options = options;
    this.clock = options.clock ?? REAL_CLOCK;
    this.callSid = options.callSid ?? twilioSid('CA');
    this.streamSid = options.streamSid ?? twilioSid('MZ');
    this.accountSid = options.accountSid ?? twilioSid('AC');
    this.clips = new Map();
    for (const name of clipsPlayedBy(options.scenario)) {
      const clip = options.clips?.[name];
      if (!clip) throw new Error(`scenario plays clip "${name}" but no audio was given for it`);
      this.clips.set(name, prepareClip(clip));
    }
    this.messages = new CarrierMessages({
      accountSid: this.accountSid,
      callSid: this.callSid,
      streamSid: this.streamSid,
    });
    this.script = new CallerScript(options.scenario);
    this.maxDurationMs = options.scenario.maxDurationMs ?? DEFAULT_MAX_DURATION_MS;
    this.maxTimelineEvents = options.maxTimelineEvents ?? DEFAULT_MAX_TIMELINE_EVENTS;
    this.recording = options.record ? new CallRecorder() : null;
    this.bot = new BotAudioTracker({
      segmentGapMs: options.botSegmentGapMs ?? DEFAULT_SEGMENT_GAP_MS,
      clearWindowMs: options.clearWindowMs ?? DEFAULT_CLEAR_WINDOW_MS,
      onMarkPlayed: (name) => this.echoMark(name),
      onEvent: (atMs, kind, detail) => this.event(atMs, kind, detail),
    });
    this.scriptHost = {
      bot: this.bot,
      play: (name, nowMs) => this.startClip(name, nowMs),
      sendDtmf: (digits, nowMs) => this.sendDigits(digits, nowMs),
      hangup: (reason) => this.end('completed', reason),
      event: (atMs, kind, detail) => this.event(atMs, kind, detail),
    };
  }

  /** Places the call; the same promise on every call. */
  run(): Promise<CallReport> {
    if (!this.done) {
      this.done = new Promise((resolve) => (this.resolveDone = resolve));
      this.originAt = this.clock.now();
      const signal = this.options.signal;
      if (signal?.aborted) this.end('aborted', 'aborted before dialling');
      else {
        signal?.addEventListener('abort', this.onAbort, { once: true });
        this.dial().catch((err: unknown) => this.end('connect-failed', errorText(err)));
      }
    }
    return this.done;
  }

  /** Ms since stream start (since run() before the stream started). */
  get elapsedMs(): number {
    return this.clock.now() - (this.streamStartAt ?? this.originAt);
  }

  /** Hangs up now: stop, then close. */
  hangup(reason = 'hangup() called'): void {
    this.end('completed', reason);
  }

  /**
   * Reply and barge-in latencies measured so far, for live progress while the call runs (the
   * report has the final figures). Only finished utterances count: while the caller is still
   * speaking, its last voiced frame is not known yet.
   */
  latenciesSoFar(): { replyLatenciesMs: number[]; bargeInLatenciesMs: number[] } {
    // All utterances bound each other's reply window; the unfinished one is left out afterwards.
    const utterances = utteranceMetrics(this.utterances, this.bot.segments, this.bot.clears).filter(
      (_, i) => this.utterances[i]!.endMs !== null,
    );
    return {
      replyLatenciesMs: utterances.flatMap((u) => (u.replyLatencyMs === null ? [] : [u.replyLatencyMs])),
      bargeInLatenciesMs: utterances.flatMap((u) => (u.bargeInLatencyMs === null ? [] : [u.bargeInLatencyMs])),
    };
  }

  /** Sends DTMF outside the script (e.g. from a test); ignored before the stream starts. */
  sendDtmf(digits: string): void {
    if (this.streamStartAt !== null && !this.ending) this.sendDigits(digits, this.elapsedMs);
  }

  private readonly onAbort = (): void => this.end('aborted', 'aborted');

  private async dial(): Promise<void> {
    const { target, connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS } = this.options;
    let parameters: Record<string, string> = {};
    if ('webhookUrl' in target) {
      try {
        const stream = await fetchStreamInstruction({
          webhookUrl: target.webhookUrl,
          form: this.webhookForm(),
          authToken: this.options.authToken,
          timeoutMs: connectTimeoutMs,
          signal: this.options.signal,
        });
        this.webhookMs = this.clock.now() - this.originAt;
        this.event(
          this.webhookMs,
          'webhook-answered',
          `${stream.bidirectional ? 'Connect' : 'Start'} Stream ${stream.url}`,
        );
        this.wssUrl = stream.url;
        parameters = stream.parameters;
      } catch (err) {
        this.event(this.elapsedMs, 'error', errorText(err));
        this.end('connect-failed', errorText(err));
        return;
      }
    } else {
      this.wssUrl = target.wssUrl;
    }
    this.customParameters = { ...parameters, ...this.options.customParameters };
    if (this.options.beforeMediaStream) await this.options.beforeMediaStream();
    const headers: Record<string, string> = {};
    if (this.options.authToken) {
      // The carrier signs the wss:// URL it dials, without query parameters.
      headers['x-twilio-signature'] = await signatureFor(this.options.authToken, this.wssUrl.split('?')[0]!, {});
    }
    if (this.ending) return;
    const connectAt = this.clock.now();
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.wssUrl, { headers, handshakeTimeout: connectTimeoutMs, perMessageDeflate: false });
    } catch (err) {
      this.end('connect-failed', errorText(err));
      return;
    }
    this.socket = socket;
    socket.on('open', () => {
      this.connectMs = this.clock.now() - connectAt;
      this.event(this.elapsedMs, 'ws-open');
      this.startStream();
    });
    socket.on('message', (data, isBinary) => {
      try {
        this.onMessage(data, isBinary);
      } catch (err) {
        this.event(this.elapsedMs, 'error', errorText(err));
        this.end('error', `simulator error: ${errorText(err)}`);
      }
    });
    socket.on('error', (err) => {
      if (this.ending) return;
      this.event(this.elapsedMs, 'error', errorText(err));
      this.end(this.streamStartAt === null ? 'connect-failed' : 'error', errorText(err));
    });
    socket.on('close', (code, reason) => this.onClose(code, reason.toString()));
  }

  private webhookForm(): Record<string, string> {
    const from = this.options.from ?? '+15555550100';
    const to = this.options.to ?? '+15555550199';
    const direction = this.options.direction ?? 'inbound';
    return {
      AccountSid: this.accountSid,
      ApiVersion: '2010-04-01',
      CallSid: this.callSid,
      // An inbound call's webhook comes while it rings; an outbound call's when the callee answers.
      CallStatus: direction === 'inbound' ? 'ringing' : 'in-progress',
      Called: to,
      Caller: from,
      Direction: direction,
      From: from,
      To: to,
    };
  }

  private startStream(): void {
    if (this.ending) {
      this.closeSocket(1000, 'call ended');
      return;
    }
    const socket = this.socket!;
    socket.send(this.messages.connected());
    const beforeStart = this.elapsedMs;
    this.event(beforeStart, 'connected-sent');
    socket.send(this.messages.start(this.customParameters));
    this.streamStartAt = this.clock.now();
    // Set-up events so far were stamped from run(); move them onto the stream-start timeline.
    const shiftMs = this.streamStartAt - this.originAt;
    for (const e of this.timeline) e.atMs = round(e.atMs - shiftMs);
    if (this.options.onEvent) for (const e of this.timeline) this.options.onEvent(e);
    this.event(0, 'start-sent');
    this.onTimer();
  }

  /** The call's clock: catches up on every frame whose time has come, then sleeps until the next. */
  private readonly onTimer = (): void => {
    this.timer = null;
    const start = this.streamStartAt!;
    let now = this.clock.now();
    const lagMs = now - (start + this.tickIndex * FRAME_MS);
    if (lagMs > this.clockMaxLagMs) this.clockMaxLagMs = lagMs;
    try {
      while (!this.ending && start + this.tickIndex * FRAME_MS <= now) {
        this.tick(now - start);
        this.tickIndex += 1;
        now = this.clock.now();
      }
    } catch (err) {
      // A bug in one call must end that call, not a load test running hundreds of them.
      this.event(this.elapsedMs, 'error', errorText(err));
      this.end('error', `simulator error: ${errorText(err)}`);
    }
    if (!this.ending) {
      this.timer = this.clock.setTimeout(
        this.onTimer,
        Math.max(0, start + this.tickIndex * FRAME_MS - this.clock.now()),
      );
    }
  };

  /** One 20 ms frame: the bot's playout advances, the script acts, the caller's frame goes out. */
  private tick(nowMs: number): void {
    if (nowMs >= this.maxDurationMs) {
      this.end('completed', `max duration ${this.maxDurationMs} ms reached`);
      return;
    }
    const botBytes = this.bot.tick(nowMs, this.botFrame);
    // Silence while the bot is quiet, so a key pressed twice is heard twice.
    for (const key of this.keyDetector.push(botBytes > 0 ? this.botFrame.subarray(0, botBytes) : SILENCE_FRAME)) {
      this.keysHeard += key;
      this.event(nowMs, 'dtmf-heard', key);
    }
    if (this.playing === null) this.script.advance(nowMs, this.scriptHost);
    if (this.ending) return;

    let payload = SILENCE_PAYLOAD;
    let callerFrame: Uint8Array = SILENCE_FRAME;
    const playing = this.playing as PlayingClip | null;
    if (playing) {
      const index = playing.nextFrame;
      const clip = playing.clip;
      payload = clip.payloads[index]!;
      callerFrame = clip.frames.subarray(index * MULAW_FRAME_BYTES, (index + 1) * MULAW_FRAME_BYTES);
      if (index === 0) this.event(nowMs, 'caller-audio-start', playing.name);
      if (index === clip.firstVoicedFrame) {
        playing.utterance.firstVoicedMs = nowMs;
        playing.utterance.firstVoicedAudioMs = this.tickIndex * FRAME_MS;
        this.event(nowMs, 'caller-voice-start', playing.name);
      }
      if (index === clip.lastVoicedFrame) {
        playing.utterance.lastVoicedMs = nowMs;
        this.event(nowMs, 'caller-voice-end', playing.name);
      }
      playing.nextFrame += 1;
      if (playing.nextFrame >= clip.frameCount) {
        playing.utterance.endMs = nowMs;
        this.event(nowMs, 'caller-audio-end', playing.name);
        this.playing = null;
      }
    }
    this.send(this.messages.media(this.tickIndex + 1, this.tickIndex * FRAME_MS, payload));
    this.framesSent += 1;
    this.recording?.appendTick(callerFrame, this.botFrame, botBytes);
  }

  private startClip(name: string, nowMs: number): void {
    const clip = this.clips.get(name)!;
    const utterance: UtteranceRecord = {
      clip: name,
      startMs: nowMs,
      endMs: null,
      firstVoicedMs: null,
      lastVoicedMs: null,
      // The clip's first frame goes out on this tick.
      startAudioMs: this.tickIndex * FRAME_MS,
    };
    this.utterances.push(utterance);
    if (clip.frameCount === 0) utterance.endMs = nowMs;
    else this.playing = { name, clip, nextFrame: 0, utterance };
  }

  private sendDigits(digits: string, nowMs: number): void {
    for (const digit of digits) {
      this.send(this.messages.dtmf(digit));
      this.dtmfSent += 1;
      this.event(nowMs, 'dtmf-sent', digit);
    }
  }

  private echoMark(name: string): void {
    if (this.ending) return;
    this.send(this.messages.mark(name));
    this.marksEchoed += 1;
    this.event(this.elapsedMs, 'mark-echoed', name);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (this.ending) return;
    const nowMs = this.elapsedMs;
    if (this.streamStartAt === null) {
      // Cannot happen with `start` sent in the open handler, but a report must never lie.
      this.violation(nowMs, 'before-start', isBinary ? 'binary frame' : String(data).slice(0, 120));
      return;
    }
    const checked = checkServerMessage(data, isBinary, this.streamSid);
    if (!checked.ok) {
      this.violation(nowMs, checked.kind, checked.detail);
      return;
    }
    const message = checked.message;
    switch (message.event) {
      case 'media': {
        const result = this.bot.media(message.media.payload, nowMs);
        if (result === 'invalid-base64')
          this.violation(nowMs, 'invalid-base64', `${message.media.payload.length} characters`);
        else if (result === 'overflow' && !this.overflowReported) {
          // Twilio warns once per stream and discards the excess.
          this.overflowReported = true;
          this.violation(nowMs, 'buffer-overflow', 'more than 10 minutes of audio buffered');
        }
        return;
      }
      case 'mark':
        this.marksReceived += 1;
        this.event(nowMs, 'mark-received', message.mark.name);
        this.noteToolSignal(nowMs, message.mark.name);
        this.bot.mark(message.mark.name);
        return;
      case 'clear':
        this.bot.clear(nowMs);
        return;
    }
  }

  /** Switchboard marks each function call's start and end (`tool:<name>:<phase>`); other marks are audio's. */
  private noteToolSignal(nowMs: number, name: string): void {
    const match = /^tool:([^:]+):(started|ok|error|timeout|cancelled)$/.exec(name);
    if (!match) return;
    const [, tool, phase] = match as unknown as [string, string, string];
    if (phase === 'started') {
      this.tools.started += 1;
      this.tools.byTool[tool] = (this.tools.byTool[tool] ?? 0) + 1;
    } else this.tools.byOutcome[phase] = (this.tools.byOutcome[phase] ?? 0) + 1;
    this.event(nowMs, 'tool-call', `${tool} ${phase}`);
  }

  private violation(atMs: number, kind: ViolationKind, detail: string): void {
    this.violationTotal += 1;
    this.violationCounts[kind] = (this.violationCounts[kind] ?? 0) + 1;
    if (this.violationSamples.length < MAX_VIOLATION_SAMPLES)
      this.violationSamples.push({ atMs: round(atMs), kind, detail });
    this.event(atMs, 'violation', `${kind}: ${detail}`);
  }

  private event(atMs: number, kind: TimelineKind, detail?: string): void {
    if (this.timeline.length >= this.maxTimelineEvents) {
      this.timelineDropped += 1;
      return;
    }
    const event: TimelineEvent =
      detail === undefined ? { atMs: round(atMs), kind } : { atMs: round(atMs), kind, detail };
    this.timeline.push(event);
    if (this.streamStartAt !== null) this.options.onEvent?.(event);
  }

  private send(text: string): void {
    const socket = this.socket;
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(text);
  }

  /** Starts ending the call (once): the caller hangs up with stop + close unless the server already closed. */
  private end(outcome: CallOutcome, reason: string): void {
    if (this.ending) return;
    this.ending = { outcome, reason };
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.options.signal?.removeEventListener('abort', this.onAbort);
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) {
      this.finish();
      return;
    }
    if (outcome === 'completed' || outcome === 'aborted') {
      this.event(this.elapsedMs, 'hangup', reason);
      if (socket.readyState === WebSocket.OPEN) {
        socket.send(this.messages.stop());
        this.event(this.elapsedMs, 'stop-sent');
        this.closeInfo = { code: 1000, reason: 'call ended', by: 'caller' };
      }
    }
    this.closeSocket(1000, 'call ended');
  }

  private closeSocket(code: number, reason: string): void {
    const socket = this.socket!;
    if (socket.readyState === WebSocket.CONNECTING) {
      socket.terminate();
      return;
    }
    socket.close(code, reason);
    // A server that never answers the close frame must not keep the call (and a load test) alive.
    // Wall time: the close handshake is the network's.
    const grace = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
    grace.unref();
    socket.once('close', () => clearTimeout(grace));
  }

  private onClose(code: number, reason: string): void {
    if (!this.ending) {
      this.closeInfo = { code, reason, by: 'server' };
      this.event(this.elapsedMs, 'socket-closed', `by server: ${code}${reason ? ` ${reason}` : ''}`);
      this.end(
        this.streamStartAt === null ? 'connect-failed' : 'server-closed',
        `server closed the socket (${code}${reason ? ` ${reason}` : ''})`,
      );
      return;
    }
    if (this.closeInfo?.by === 'caller')
      this.closeInfo = { code, reason: reason || this.closeInfo.reason, by: 'caller' };
    if (this.streamStartAt !== null)
      this.event(this.elapsedMs, 'socket-closed', `${code}${reason ? ` ${reason}` : ''}`);
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    const nowMs = this.elapsedMs;
    this.bot.finish(nowMs);
    this.socket?.removeAllListeners('message');
    this.socket = null;
    this.resolveDone(this.buildReport(nowMs));
  }

  private buildReport(nowMs: number): CallReport {
    const bot = this.bot;
    const utterances = utteranceMetrics(this.utterances, bot.segments, bot.clears);
    const timeline = this.timeline.slice().sort((a, b) => a.atMs - b.atMs);
    return {
      callSid: this.callSid,
      streamSid: this.streamSid,
      accountSid: this.accountSid,
      wssUrl: this.wssUrl,
      customParameters: this.customParameters,
      outcome: this.ending!.outcome,
      endReason: this.ending!.reason,
      setup: {
        webhookMs: this.webhookMs === null ? null : round(this.webhookMs),
        connectMs: this.connectMs === null ? null : round(this.connectMs),
      },
      durationMs: this.streamStartAt === null ? 0 : round(nowMs),
      close: this.closeInfo,
      timeline,
      timelineDropped: this.timelineDropped,
      metrics: {
        firstBotAudioMs: bot.firstAudioMs === null ? null : round(bot.firstAudioMs),
        utterances,
        replyLatenciesMs: utterances.flatMap((u) => (u.replyLatencyMs === null ? [] : [u.replyLatencyMs])),
        bargeInLatenciesMs: utterances.flatMap((u) => (u.bargeInLatencyMs === null ? [] : [u.bargeInLatencyMs])),
        clears: clearMetrics(bot.clears),
        clearWindowMs: this.options.clearWindowMs ?? DEFAULT_CLEAR_WINDOW_MS,
        bot: {
          segments: bot.segments.length,
          receivedAudioMs: round(bot.receivedBytes / 8),
          playedAudioMs: round(bot.playedBytes / 8),
          underruns: bot.underruns,
          underrunTotalMs: bot.underrunTotalMs,
          longestUnderrunMs: bot.longestUnderrunMs,
          shortFrames: bot.shortFrames,
          keysHeard: this.keysHeard,
        },
        marks: { received: this.marksReceived, echoed: this.marksEchoed },
        tools: {
          started: this.tools.started,
          byOutcome: { ...this.tools.byOutcome },
          byTool: { ...this.tools.byTool },
        },
        caller: { framesSent: this.framesSent, dtmfSent: this.dtmfSent },
        violations: { total: this.violationTotal, byKind: { ...this.violationCounts }, samples: this.violationSamples },
        clockMaxLagMs: round(this.clockMaxLagMs),
      },
    };
  }
}

/** Places one call and resolves with its report; see PhoneCall. */
export function runPhoneCall(options: PhoneCallOptions): Promise<CallReport> {
  return new PhoneCall(options).run();
}

function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}

import type { Logger } from 'pino';
import { fromTelephony, toTelephony } from '../audio/format-converter.js';
import { decodeMulaw } from '../audio/mulaw.js';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { isSpeechToSpeech } from '../bots/profiles.js';
import type { AppConfig } from '../config/env.js';
import { providerSettingsFor } from './provider-settings.js';
import type { ProviderRegistry, ProviderSettings } from '../providers/registry.js';
import {
  type LlmMessage,
  type LlmProvider,
  type ProviderContext,
  ProviderError,
  type SttEvent,
  type SttProvider,
  type TtsProvider,
  isAbortError,
} from '../providers/types.js';
import { type BotSettings, type InterruptionSettings, botSettings } from './bot-settings.js';
import type { CallStart, CallTransport, CallTransportHandler } from './call-transport.js';
import { CallLifecycle, type CallLifecycleDeps } from './call-lifecycle.js';
import { type CallMetrics, type TurnTimings, elapsedSince } from './call-metrics.js';
import type { CallVad, CallVadFactory } from '../vad/call-vad.js';
import { Conversation } from './conversation.js';
import { DtmfGatherer } from './dtmf-gatherer.js';
import { CALL_FRAMES_PER_WRITE, Playout } from './playout.js';
import { ReplayableText, mayRetry, retryDelay } from './retry.js';
import { SentenceSplitter } from './sentence-splitter.js';
import { SttInput } from './stt-input.js';
import { TranscriptGuard, capTurnText } from './transcript-guard.js';
import { DEFAULT_TURN_DEADLINE_MS, TurnDeadline } from './turn-deadline.js';
import { NATURAL_TURN_POLICY } from './natural-turn-policy.js';
import { DEFAULT_TURN_POLICY, type TurnDecision, TurnController, type TurnPolicy } from './turn-controller.js';

export interface CallSessionDeps extends CallLifecycleDeps {
  registry: ProviderRegistry;
  createVad: CallVadFactory;
  env: AppConfig['env'];
  /** Speaks apologies when the configured TTS cannot (an offline engine). */
  fallbackTts: () => TtsProvider;
  leadMs?: number;
  turnPolicy?: TurnPolicy;
  /** Told what the call says and does as it happens (a room shows it to its participants). */
  events?: CallEvents;
  /** The caller's latest camera frame (base64 JPEG), given to the LLM with each user turn. */
  latestImage?: () => string | undefined;
  /** How long after the end of a caller's turn they must hear something (SWITCHBOARD_TURN_DEADLINE_SECS), ms. */
  turnDeadlineMs?: number;
}

/** Live happenings of a call, for whoever shows them; each is optional to handle. */
export interface CallEvents {
  onUserSpeaking?(speaking: boolean): void;
  /** Interim (final=false) and final transcripts of the caller. */
  onUserTranscript?(text: string, final: boolean): void;
  /** Each sentence the bot is about to speak. */
  onBotText?(text: string): void;
  /** The bot's audio started going out (true), or finished playing or was cut off (false). */
  onBotSpeaking?(speaking: boolean): void;
  /** From the end of the caller's turn to the first frame of the answer, ms. */
  onTurnLatency?(latencyMs: number): void;
}

/** Lines the bot says on its own. */
export const PHRASES = {
  goodbye: 'We have reached the time limit for this call. Thank you for calling, goodbye!',
  shutdown: 'Sorry, I have to end our call now. Thank you for calling, goodbye!',
  llmFailed: 'Sorry, I had a problem coming up with an answer. Could you say that again?',
  ttsFailed: 'Sorry, I had a problem speaking. Could you say that again?',
  sttFailed: 'Sorry, I cannot hear you right now. Please try calling again later.',
  unavailable: 'Sorry, this assistant is not available right now. Please try again later.',
} as const;

/**
 * Frames held while the STT socket opens (5 s of 20 ms frames, 40 kB): a slow handshake must not
 * cut the middle out of a caller's first words.
 */
const MAX_PENDING_STT_FRAMES = 250;
/**
 * A reply paused on suspected speech resumes by itself after this long if nothing settled it
 * (VAD neither confirmed nor dismissed, and no turn of the caller is open): a stuck VAD must not
 * silence the bot for good.
 */
const MAX_PAUSE_MS = 2000;

interface Reply {
  generation: number;
  abort: AbortController;
  timings: TurnTimings;
  originMs: number;
  /** Audio produced so far, ms (8 bytes of mu-law per ms). */
  audioMs: number;
  /** The goodbye (or the apology after a fatal error): the call ends once it has played. */
  endsCall: boolean;
}

/**
 * One phone call with a bot: owns its lifetime (an AbortController, timers, the providers it
 * opened) and wires transport → VAD/STT → turn controller → LLM → TTS → Playout. Every background
 * promise ends in a catch here; nothing a call does can crash the process.
 */
export class CallSession implements CallTransportHandler {
  private readonly call: CallLifecycle;
  private readonly metrics: CallMetrics;
  private readonly playout: Playout;
  private readonly turns: TurnController;
  private readonly deadline: TurnDeadline;
  private settings: BotSettings | undefined;
  private conversation: Conversation | undefined;
  /** The caller's audio and Finalize requests to the STT, held in order while its socket opens. */
  private readonly sttInput = new SttInput(MAX_PENDING_STT_FRAMES);
  /** Refuses transcripts the caller's audio could not hold (a provider fault). */
  private readonly transcripts = new TranscriptGuard();
  private llm: LlmProvider | undefined;
  private tts: TtsProvider | undefined;
  private vad: CallVad | undefined;
  private pcm = new Int16Array(160);
  private reply: Reply | undefined;
  private turnCount = 0;
  private vadStopAtMs: number | undefined;
  private readonly dtmf = new DtmfGatherer((digits) => this.onDtmfInput(digits));
  /** Providers are created: the call hears the caller and can speak. */
  private ready = false;
  private readonly interruptionMode: 'instant' | 'confirmed';
  /** The reply was paused on suspected speech (see the barge-in section); its safety timer. */
  private pauseTimer: NodeJS.Timeout | undefined;
  /** The pause silenced audio the caller could hear (counted in the call's pauses and resumes), rather than holding a reply between its sentences. */
  private pauseSilenced = false;

  constructor(
    transport: CallTransport,
    private readonly config: BotConfigForCall,
    private readonly deps: CallSessionDeps,
  ) {
    this.playout = new Playout(
      transport,
      {
        onFirstFrame: (generation) => {
          this.deadline.met();
          const reply = this.reply;
          if (reply && reply.generation === generation) {
            reply.timings.firstFrameSentMs = elapsedSince(reply.originMs);
            this.deps.events?.onBotSpeaking?.(true);
            if (reply.timings.kind === 'answer') this.deps.events?.onTurnLatency?.(reply.timings.firstFrameSentMs);
          }
        },
        onReplyPlayed: (generation) => this.onReplyPlayed(generation),
      },
      { leadMs: deps.leadMs, framesPerWrite: CALL_FRAMES_PER_WRITE },
    );
    this.call = new CallLifecycle(transport, config, this.playout, deps);
    this.metrics = this.call.metrics;
    const interruption = botSettings(config.body).interruption;
    this.interruptionMode = interruption.mode;
    this.turns = new TurnController(
      (decision) => this.onTurnDecision(decision),
      turnPolicyFor(interruption, deps.turnPolicy),
    );
    this.deadline = new TurnDeadline(deps.turnDeadlineMs ?? DEFAULT_TURN_DEADLINE_MS, () => this.onTurnDeadline());
  }

  // ---- transport events ----

  private get log(): Logger {
    return this.call.log;
  }

  private get ending(): boolean {
    return this.call.ending;
  }

  private get ended(): boolean {
    return this.call.ended;
  }

  onStart(start: CallStart): void {
    this.call.start(start);
    this.setUp().catch((err: unknown) => this.fail(err, 'call set-up failed'));
  }

  onAudio(mulaw: Uint8Array): void {
    if (!this.ready || this.ended) return;
    this.transcripts.heard(mulaw.length / 8);
    this.sttInput.write(mulaw);
    if (this.vad) {
      if (this.pcm.length !== mulaw.length) this.pcm = new Int16Array(mulaw.length);
      this.vad.push(decodeMulaw(mulaw, this.pcm));
    }
  }

  onMark(name: string): void {
    this.playout.onMarkEchoed(name);
  }

  onDtmf(digit: string): void {
    if (!this.ready || this.ending) return;
    this.metrics.dtmfDigits += 1;
    // A key press while the bot talks is an interruption, as on any phone menu.
    if (this.reply) this.interrupt('dtmf');
    this.dtmf.press(digit);
  }

  onEnd(reason: string): void {
    if (!this.call.finish(reason)) return;
    this.dtmf.dispose();
    clearTimeout(this.pauseTimer);
    this.turns.dispose();
    this.deadline.dispose();
    this.vad?.dispose();
    const stt = this.sttInput.stop();
    stt?.close().catch((err: unknown) => this.log.debug({ err }, 'stt close failed'));
    this.tts?.close?.();
  }

  // ---- set-up ----

  private async setUp(): Promise<void> {
    const body = this.config.body;
    this.settings = botSettings(body);
    this.conversation = new Conversation(this.settings.initialMessages);
    if (isSpeechToSpeech(body.bot_profile)) {
      throw new Error(`profile ${body.bot_profile} (speech-to-speech) is not available in this build`);
    }
    const settings = this.settings;
    const services = body.services;
    this.llm = this.deps.registry.createLlm(services.llm!, this.providerSettings(services.llm!, settings.llm));
    this.tts = this.deps.registry.createTts(services.tts!, this.providerSettings(services.tts!, settings.tts));
    // Provider sockets open with the call, so the first reply does not wait for a handshake.
    this.tts.warmUp?.(this.log);
    const stt = this.deps.registry.createStt(services.stt!, this.providerSettings(services.stt!, settings.stt));
    this.vad = this.deps.createVad(
      settings.vad,
      {
        onSpeechSuspected: () => this.onCallerSpeechSuspected(),
        onSpeechDismissed: () => this.onCallerSpeechDismissed(),
        onSpeechStart: () => this.onCallerSpeechStart(),
        onSpeechStop: (event) => this.onCallerSpeechStop(event?.sinceMs),
      },
      this.log,
    );
    this.ready = true;
    this.call.armMaxDuration(settings.maxDurationSecs, () =>
      this.endWithGoodbye('max_duration', 1000, PHRASES.goodbye),
    );
    if (settings.runOnConfig) this.answer('greeting');
    await this.openStt(stt);
  }

  private async openStt(provider: SttProvider): Promise<void> {
    const stream = await provider.open(this.context(this.call.abort.signal), (event) => this.onSttEvent(event));
    if (this.ended) {
      await stream.close();
      return;
    }
    this.sttInput.open(stream, fromTelephony(provider.inputFormat));
  }

  private providerSettings(name: string, options: Record<string, unknown>): ProviderSettings {
    return providerSettingsFor(this.config.body, name, options, this.deps.env);
  }

  private context(signal: AbortSignal): ProviderContext {
    return { signal, log: this.log };
  }

  // ---- turn-taking and barge-in ----
  //
  // Barge-in, from ear to clear, all of it in this section:
  //  1. Silero suspects speech (its first window above confidence and min_volume while a reply
  //     is in progress, audible or between two sentences) → onCallerSpeechSuspected. In `instant`
  //     mode the reply pauses: Playout.pause() sends `clear` through the transport (carrier or
  //     room) at once; the LLM and TTS go on, and their audio waits in Playout behind the part the
  //     caller has not heard.
  //  2. Silero confirms start_secs of speech → onCallerSpeechStart. The turn controller decides
  //     whether speech interrupts (min words from interims, never a backchannel) and answers
  //     'barge-in' → onTurnDecision → interrupt(): the reply's abort stops the LLM, the TTS and any
  //     retry, Playout.clear() drops the audio (and sends `clear` unless paused), and the context
  //     keeps what was heard.
  //  3. Not speech after all (dismissed: a cough, a clatter; or speech that did not interrupt: a
  //     backchannel, a turn with no words) → resumeReply(): Playout.resume() sends the reply again
  //     from the heard point, and the context records it as spoken when it ends.
  // In `confirmed` mode step 1 does nothing: the bot talks on until step 2, as it always did.

  private onCallerSpeechSuspected(): void {
    // Every decision is logged (debug): which condition kept a suspicion from pausing the bot.
    const skipped =
      this.interruptionMode !== 'instant'
        ? 'mode confirmed'
        : !this.reply
          ? 'no reply'
          : this.ending
            ? 'call ending'
            : !this.playout.active
              ? 'reply played'
              : undefined;
    if (skipped) {
      this.log.debug({ skipped }, 'speech suspected: bot not paused');
      return;
    }
    // Between two sentences nothing may be audible, but the next is on its way: it is held too,
    // or it would start over the caller and play on until start_secs confirmed the speech.
    const audible = this.playout.audible;
    const heardMs = this.playout.pause();
    if (heardMs === undefined) {
      this.log.debug({ skipped: 'already paused' }, 'speech suspected: bot not paused');
      return;
    }
    this.pauseSilenced = audible;
    if (audible) this.metrics.paused();
    clearTimeout(this.pauseTimer);
    this.pauseTimer = setTimeout(() => this.onPauseTimeout(), MAX_PAUSE_MS);
    this.log.debug({ heardMs, audible }, 'speech suspected: bot paused');
  }

  private onCallerSpeechDismissed(): void {
    this.log.debug({ turnOpen: this.turns.turnOpen }, 'suspected speech dismissed');
    // Only a suspicion nothing else took over: once VAD confirmed speech, the turn decides.
    if (!this.turns.turnOpen) this.resumeReply('noise');
  }

  private onPauseTimeout(): void {
    this.pauseTimer = undefined;
    if (!this.playout.paused) return;
    if (this.turns.turnOpen) this.pauseTimer = setTimeout(() => this.onPauseTimeout(), MAX_PAUSE_MS);
    else this.resumeReply('timeout');
  }

  /** Step 3: the caller did not interrupt after all; play on from the first unheard word. */
  private resumeReply(cause: 'noise' | 'no-turn' | 'timeout'): void {
    if (!this.playout.paused || !this.reply || this.ended) return;
    clearTimeout(this.pauseTimer);
    this.pauseTimer = undefined;
    this.playout.resume();
    if (this.pauseSilenced) this.metrics.resumed();
    this.log.debug({ cause, heardMs: this.playout.heardMs() }, 'not an interruption: bot resumed');
  }

  private onCallerSpeechStart(): void {
    this.deps.events?.onUserSpeaking?.(true);
    this.turns.onVadStart();
  }

  private onCallerSpeechStop(speechEndMs: number | undefined): void {
    this.vadStopAtMs = performance.now();
    this.deps.events?.onUserSpeaking?.(false);
    this.turns.onVadStop(speechEndMs);
  }

  private onSttEvent(event: SttEvent): void {
    if (this.ended) return;
    switch (event.type) {
      case 'interim':
        if (!this.transcripts.fitsInterim(event.text)) {
          this.onImpossibleTranscript(event.text);
          return;
        }
        if (event.text) this.deps.events?.onUserTranscript?.(event.text, false);
        this.turns.onInterim(event.text);
        return;
      case 'final':
        if (!this.transcripts.acceptFinal(event.text)) {
          this.onImpossibleTranscript(event.text);
          return;
        }
        if (event.text) this.deps.events?.onUserTranscript?.(event.text, true);
        this.turns.onFinal(
          event.text,
          event.coveredToMs === undefined ? undefined : this.sttInput.callMs(event.coveredToMs),
        );
        return;
      case 'error':
        this.metrics.providerErrors += 1;
        this.log.error(
          { provider: event.error.provider, error: event.error.message },
          'speech-to-text failed for good; ending the call',
        );
        this.sttInput.stop();
        // Without ears the bot cannot hold a conversation: say so and hang up.
        this.call.endWith('error', () => this.speakFixed('apology', PHRASES.sttFailed, true, true));
        return;
      default:
        return;
    }
  }

  /** A transcript longer than the caller's audio since the last turn could hold: dropped (see TranscriptGuard). */
  private onImpossibleTranscript(text: string): void {
    this.metrics.droppedTranscripts += 1;
    if (this.transcripts.faults > 1) return;
    this.log.warn(
      { provider: this.config.body.services.stt, chars: text.length, allowedChars: this.transcripts.allowedChars() },
      'speech-to-text sent a transcript longer than the caller could have said; dropped (logged once per call)',
    );
  }

  private onTurnDecision(decision: TurnDecision): void {
    if (this.ended) return;
    switch (decision.type) {
      case 'barge-in':
        if (!this.ending) this.interrupt('speech');
        return;
      case 'finalize-stt':
        // Held in its place if the STT is still opening (a caller who spoke at once): see SttInput.
        this.sttInput.finalize();
        return;
      case 'user-turn':
        this.transcripts.turnEnded();
        if (this.ending) return;
        this.conversation!.addUser(capTurnText(decision.text));
        this.attachLatestImage();
        this.answer('answer');
        return;
      case 'false-alarm':
        this.transcripts.turnEnded();
        this.metrics.falseAlarms += 1;
        this.resumeReply('no-turn');
        // Noise cut off a reply the caller had not heard yet: their turn is still owed an answer.
        if (this.deadline.owed && !this.reply && !this.ending) this.answer('answer');
        return;
      case 'user-speaking':
        return;
    }
  }

  /** Vision: the newest camera frame goes with the newest user message only (older ones are dropped). */
  private attachLatestImage(): void {
    const image = this.deps.latestImage?.();
    if (!image) return;
    const messages = this.conversation!.messages;
    for (const message of messages) delete message.imageBase64;
    messages.at(-1)!.imageBase64 = image;
  }

  private onDtmfInput(digits: string): void {
    if (this.ending || this.ended) return;
    this.conversation!.addUser(`DTMF: ${digits}`);
    this.answer('dtmf');
  }

  /** Barge-in (step 3 above): stop the reply everywhere, clear the carrier, keep in context only what was heard. */
  private interrupt(cause: 'speech' | 'dtmf'): void {
    const reply = this.reply;
    if (!reply) return;
    this.reply = undefined;
    reply.abort.abort();
    clearTimeout(this.pauseTimer);
    this.pauseTimer = undefined;
    const cleared = this.playout.clear();
    const heardText = this.conversation!.truncateReply(cleared.heardMs, reply.audioMs);
    reply.timings.interrupted = true;
    this.metrics.bargeIns += 1;
    this.turns.setBotSpeaking(false);
    this.deps.events?.onBotSpeaking?.(false);
    this.log.info(
      {
        cause,
        heardMs: cleared.heardMs,
        sentMs: cleared.sentMs,
        clearSent: cleared.cleared,
        heardChars: heardText.length,
      },
      'caller interrupted the bot',
    );
  }

  // ---- replies ----

  /** Runs the LLM on the conversation and speaks its answer. */
  private answer(kind: TurnTimings['kind']): void {
    // The caller already waited the whole deadline (they spoke again into the silence): no second wait.
    if (this.deadline.overdue) {
      this.apologiseForDeadline();
      return;
    }
    const llm = this.llm!;
    const tools = this.settings!.llm.tools as Array<Record<string, unknown>> | undefined;
    this.startReply(kind, false, this.tts!, async function* (session, reply, ctx, messages) {
      const splitter = new SentenceSplitter();
      for (let attempt = 0; ; attempt++) {
        let used = false;
        try {
          for await (const delta of llm.complete({ messages, tools }, ctx)) {
            if (delta.type !== 'text') continue;
            used = true;
            reply.timings.llmFirstTokenMs ??= elapsedSince(reply.originMs);
            session.conversation!.appendReplyText(delta.text);
            for (const piece of splitter.push(delta.text)) {
              session.deps.events?.onBotText?.(piece);
              yield piece;
            }
          }
          break;
        } catch (err) {
          if (used || !mayRetry(err, attempt, ctx.signal)) throw new LlmFailure(err);
          session.log.warn(
            { err, provider: llm.name, attempt: attempt + 1 },
            'llm request failed before any text; retrying',
          );
          await retryDelay(attempt, ctx.signal);
          if (ctx.signal.aborted) return;
        }
      }
      const rest = splitter.flush();
      if (rest) {
        session.deps.events?.onBotText?.(rest);
        yield rest;
      }
    });
  }

  /** Says a fixed phrase (goodbye, apology), with the fallback TTS when asked. */
  private speakFixed(kind: TurnTimings['kind'], text: string, useFallbackTts: boolean, endsCall = false): void {
    const tts = useFallbackTts || !this.tts ? this.deps.fallbackTts() : this.tts;
    this.startReply(kind, endsCall, tts, async function* (session) {
      session.conversation?.appendReplyText(text);
      session.deps.events?.onBotText?.(text);
      yield text;
    });
  }

  private startReply(
    kind: TurnTimings['kind'],
    endsCall: boolean,
    tts: TtsProvider,
    text: (session: CallSession, reply: Reply, ctx: ProviderContext, history: LlmMessage[]) => AsyncIterable<string>,
  ): void {
    if (this.reply) this.interrupt('speech');
    // The history the model sees: everything before this reply, as it stands after any cut.
    const history = (this.conversation?.messages ?? []).map((m) => ({ ...m }));
    const generation = this.playout.startReply();
    this.conversation?.beginReply();
    this.turnCount += 1;
    const originMs = kind === 'answer' && this.vadStopAtMs !== undefined ? this.vadStopAtMs : performance.now();
    this.vadStopAtMs = undefined;
    const reply: Reply = {
      generation,
      abort: new AbortController(),
      timings: { turn: this.turnCount, kind, interrupted: false },
      originMs,
      audioMs: 0,
      endsCall,
    };
    this.reply = reply;
    if (kind === 'answer' || kind === 'dtmf' || kind === 'greeting') this.deadline.owe(originMs);
    this.metrics.turns.push(reply.timings);
    this.turns.setBotSpeaking(true);
    const ctx = this.context(AbortSignal.any([this.call.abort.signal, reply.abort.signal]));
    this.runReply(reply, tts, this.queuedPieces(reply, text(this, reply, ctx, history)), ctx).catch((err: unknown) =>
      this.fail(err, 'reply failed'),
    );
  }

  /** The reply's pieces on their way to the voice, noted so an interruption can tell which sentence was playing. */
  private async *queuedPieces(reply: Reply, pieces: AsyncIterable<string>): AsyncIterable<string> {
    for await (const piece of pieces) {
      if (this.reply === reply) this.conversation?.notePieceQueued(piece);
      yield piece;
    }
  }

  private async runReply(
    reply: Reply,
    tts: TtsProvider,
    text: AsyncIterable<string>,
    ctx: ProviderContext,
  ): Promise<void> {
    const replayable = new ReplayableText(text);
    for (let attempt = 0; ; attempt++) {
      try {
        await this.speak(reply, tts, replayable.reader(), ctx);
        return;
      } catch (err) {
        if (ctx.signal.aborted || isAbortError(err)) return;
        // The LLM retries on its own; a TTS failure is retried only while the caller heard nothing.
        if (!(err instanceof LlmFailure) && reply.audioMs === 0 && mayRetry(err, attempt, ctx.signal)) {
          this.log.warn({ err, provider: tts.name, attempt: attempt + 1 }, 'tts failed before any audio; retrying');
          await retryDelay(attempt, ctx.signal);
          if (ctx.signal.aborted) return;
          continue;
        }
        this.onReplyFailed(reply, err);
        return;
      }
    }
  }

  /** One TTS attempt: its audio goes to Playout, its spoken marks to the conversation. */
  private async speak(
    reply: Reply,
    tts: TtsProvider,
    text: AsyncIterable<string>,
    ctx: ProviderContext,
  ): Promise<void> {
    const converter = toTelephony(tts.outputFormat);
    let pieceStartMs = 0;
    for await (const out of tts.synthesize(text, ctx)) {
      if (ctx.signal.aborted) return;
      if (out.type === 'audio') {
        const mulaw = converter.convert(out.audio);
        if (mulaw.length === 0) continue;
        reply.timings.ttsFirstAudioMs ??= elapsedSince(reply.originMs);
        reply.audioMs += mulaw.length / 8;
        this.playout.enqueue(reply.generation, mulaw);
      } else {
        this.conversation?.notePiece(out.text, pieceStartMs, reply.audioMs);
        pieceStartMs = reply.audioMs;
      }
    }
    if (ctx.signal.aborted) return;
    const tail = converter.flush();
    if (tail.length > 0) this.playout.enqueue(reply.generation, tail);
    this.playout.endReply(reply.generation);
  }

  private onReplyFailed(reply: Reply, err: unknown): void {
    this.metrics.providerErrors += 1;
    const llmFailed = err instanceof LlmFailure;
    const cause = llmFailed ? err.cause : err;
    const stage = llmFailed ? 'llm' : 'tts';
    // Retrying cannot fix a refused key or a bad request: say so once, plainly, and end the call.
    const fatal = cause instanceof ProviderError && !cause.retryable;
    if (fatal)
      this.log.error(
        { provider: cause.provider, stage, turn: reply.timings.turn, error: cause.message },
        `${cause.provider} refused the request; ending the call`,
      );
    else {
      const provider = cause instanceof ProviderError ? cause.provider : undefined;
      this.log.warn(
        { provider, stage, turn: reply.timings.turn, error: cause instanceof Error ? cause.message : String(cause) },
        `${provider ?? stage} failed; apologising`,
      );
    }
    if (this.reply !== reply) return;
    if (reply.timings.kind === 'apology' || reply.endsCall) {
      // Even the apology or goodbye could not be spoken: end the reply (and the call if due).
      this.playout.endReply(reply.generation);
      if (reply.endsCall) this.call.endCall();
      return;
    }
    if (fatal) {
      this.call.endWith('error', () => this.speakFixed('apology', PHRASES.unavailable, !llmFailed, true));
      return;
    }
    this.speakFixed('apology', llmFailed ? PHRASES.llmFailed : PHRASES.ttsFailed, !llmFailed);
  }

  /**
   * The caller has waited the whole turn deadline and heard nothing: abandon the silent reply
   * (its retries too) and apologise in the built-in voice, which answers at once whichever vendor
   * hung. Never over the caller: a turn of theirs in progress is answered the moment it ends.
   */
  private onTurnDeadline(): void {
    if (this.ended || this.ending) return;
    const reply = this.reply;
    if (reply && reply.audioMs > 0) return; // its first audio is going out now
    if (reply) {
      this.reply = undefined;
      reply.abort.abort();
      this.playout.clear();
      this.conversation?.truncateReply(0, 0);
      this.turns.setBotSpeaking(false);
    }
    if (this.turns.turnOpen) return;
    this.apologiseForDeadline();
  }

  private apologiseForDeadline(): void {
    // The stage that kept the caller waiting: the model if it never wrote a word, else the voice.
    const answer = this.metrics.turns.findLast(
      (t) => t.kind === 'answer' || t.kind === 'dtmf' || t.kind === 'greeting',
    );
    const stage = answer?.llmFirstTokenMs === undefined ? 'llm' : 'tts';
    const provider = stage === 'llm' ? this.llm?.name : this.tts?.name;
    this.metrics.providerErrors += 1;
    this.log.warn(
      { provider, stage, waitedMs: this.deadline.waitedMs(), turnDeadlineMs: this.deadline.deadlineMs },
      `${provider ?? stage} gave nothing to say within the turn deadline; apologising`,
    );
    this.speakFixed('apology', stage === 'llm' ? PHRASES.llmFailed : PHRASES.ttsFailed, true);
  }

  private onReplyPlayed(generation: number): void {
    const reply = this.reply;
    if (!reply || reply.generation !== generation) return;
    this.reply = undefined;
    this.conversation?.endReply();
    this.turns.setBotSpeaking(false);
    this.deps.events?.onBotSpeaking?.(false);
    if (reply.endsCall) this.call.endCall();
  }

  // ---- ending ----

  /**
   * Ends the call the way max_duration does: the bot stops what it is saying, says `text`, and
   * the stream closes with `closeCode` and `reason`. A call not yet started closes at once; one
   * already ending (a goodbye or apology playing) ends as it was going to.
   */
  endWithGoodbye(reason: string, closeCode: number, text: string = PHRASES.goodbye): void {
    if (this.ending) return;
    this.call.setCloseCode(closeCode);
    if (!this.ready) {
      this.call.endCall(reason);
      return;
    }
    this.call.endWith(reason, () => this.speakFixed('goodbye', text, false, true));
  }

  private fail(err: unknown, message: string): void {
    if (this.ended) return;
    this.log.error({ err }, message);
    this.metrics.providerErrors += 1;
    if (this.ending) {
      this.call.endCall('error');
      return;
    }
    this.ready = true;
    this.conversation ??= new Conversation([]);
    this.call.endWith('error', () => this.speakFixed('apology', PHRASES.unavailable, true, true));
  }
}

/**
 * The turn policy of a call: the room's (chosen by its profile), else the configuration's
 * `interruption.turn_policy`, with `interruption.min_words` over either when set.
 */
function turnPolicyFor(interruption: InterruptionSettings, roomPolicy: TurnPolicy | undefined): TurnPolicy {
  const policy =
    roomPolicy ?? (interruption.turnPolicy === 'natural_conversation' ? NATURAL_TURN_POLICY : DEFAULT_TURN_POLICY);
  return interruption.minWords === undefined ? policy : { ...policy, minInterruptionWords: interruption.minWords };
}

/** Marks an error as the LLM's, so the apology can still use the configured TTS. */
class LlmFailure extends Error {
  constructor(override readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

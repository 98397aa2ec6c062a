import { DTMF_GAP_MS, dtmfToneMulaw } from '../audio/dtmf-tones.js';
import { fromTelephony, toTelephony } from '../audio/format-converter.js';
import { FRAME_MS } from '../audio/frames.js';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import { isSpeechToSpeech } from '../bots/profiles.js';
import { providerSettingsFor } from './provider-settings.js';
import type { ProviderSettings } from '../providers/registry.js';
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
import { type CallSessionDeps, PHRASES } from './call-deps.js';
import { CallEngine } from './call-engine.js';
import type { CallTransport } from './call-transport.js';
import { type TurnTimings, elapsedSince } from './call-metrics.js';
import { Conversation } from './conversation.js';
import { DtmfGatherer } from './dtmf-gatherer.js';
import { Reply, type ReplyEndCause, type ReplyEnded, type ReplyParts } from './reply.js';
import { ReplayableText, mayRetry, retryDelay } from './retry.js';
import { type BuiltInTool, type CallTools, DEFAULT_MAX_TOOL_ROUNDS } from './call-tools.js';
import { LlmFailure, type ModelRoundsParts, modelRounds } from './model-rounds.js';
import { builtInTool } from './built-in-tools.js';
import type { ToolHandler } from './tool-types.js';
import { SttInput } from './stt-input.js';
import { TranscriptGuard, capTurnText } from './transcript-guard.js';
import { DEFAULT_TURN_DEADLINE_MS, TurnDeadline } from './turn-deadline.js';
import { NATURAL_TURN_POLICY } from './natural-turn-policy.js';
import { DEFAULT_TURN_POLICY, type TurnDecision, TurnController, type TurnPolicy } from './turn-controller.js';

/**
 * Frames held while the STT socket opens (5 s of 20 ms frames, 40 kB): a slow handshake must not
 * cut the middle out of a caller's first words.
 */
const MAX_PENDING_STT_FRAMES = 250;
/**
 * The voice's audio before a key press must have stopped this long (and all of it played) before
 * the tones go out: a streaming voice delivers its chunks closer together than this.
 */
const DIGITS_QUIET_MS = 2 * DTMF_GAP_MS;

/**
 * One phone call with a bot: owns its lifetime (an AbortController, timers, the providers it
 * opened) and wires transport → VAD/STT → turn controller → LLM → TTS → Playout. Each answer is a
 * `Reply` (reply.ts), the one holder of "the bot is talking". Every background promise ends in a
 * catch here; nothing a call does can crash the process.
 */
export class CallSession extends CallEngine {
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
  /** The reply that is live (being produced, playing or paused), if any. */
  private reply: Reply | undefined;
  private turnCount = 0;
  private vadStopAtMs: number | undefined;
  private readonly dtmf: DtmfGatherer;
  /** Providers are created: the call hears the caller and can speak. */
  private ready = false;
  private readonly interruptionMode: 'instant' | 'confirmed';
  /** The functions the model may call on this call. */
  private tools: CallTools | undefined;
  /** What ends the call after its last reply instead of hanging up (a transfer). */
  private afterLastReply: (() => void) | undefined;

  constructor(transport: CallTransport, config: BotConfigForCall, deps: CallSessionDeps) {
    super(transport, config, deps, {
      onFirstFrame: (generation) => {
        this.deadline.met();
        if (this.reply?.generation === generation) this.reply.onFirstFrame();
      },
      onReplyPlayed: (generation) => {
        if (this.reply?.generation === generation) this.reply.end('played');
      },
    });
    this.dtmf = new DtmfGatherer((digits) => this.onDtmfInput(digits), deps.clock);
    const interruption = botSettings(config.body).interruption;
    this.interruptionMode = interruption.mode;
    this.turns = new TurnController(
      (decision) => this.onTurnDecision(decision),
      turnPolicyFor(interruption, deps.turnPolicy),
      deps.clock,
    );
    this.deadline = new TurnDeadline(
      deps.turnDeadlineMs ?? DEFAULT_TURN_DEADLINE_MS,
      () => this.onTurnDeadline(),
      deps.clock,
    );
  }

  // ---- transport events ----

  onAudio(mulaw: Uint8Array): void {
    this.metrics.suspicions.heard(mulaw.length / 8);
    if (!this.ready || this.ended) return;
    this.transcripts.heard(mulaw.length / 8);
    this.sttInput.write(mulaw);
    this.hearCaller(mulaw);
  }

  onDtmf(digit: string): void {
    if (!this.ready || this.ending) return;
    this.metrics.dtmfDigits += 1;
    // A key press while the bot talks is an interruption, as on any phone menu.
    if (this.reply) this.interrupt('dtmf');
    this.dtmf.press(digit);
  }

  onEnd(reason: string): void {
    if (this.reply && !this.ended)
      this.deps.record?.replyCut(this.reply.timings, this.playout.heardMs(), this.reply.audioMs);
    if (!this.finishCore(reason)) return;
    this.dtmf.dispose();
    this.turns.dispose();
    this.deadline.dispose();
    const stt = this.sttInput.stop();
    stt?.close().catch((err: unknown) => this.log.debug({ err }, 'stt close failed'));
    this.tts?.close?.();
  }

  // ---- set-up ----

  protected async setUp(): Promise<void> {
    const body = this.config.body;
    this.settings = botSettings(body);
    this.conversation = new Conversation(this.settings.initialMessages);
    this.tools = this.createCallTools(this.settings.llm, (name) => this.builtInTool(name));
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
        onSpeechSuspected: (atMs) => this.onCallerSpeechSuspected(atMs),
        onSpeechDismissed: () => this.onCallerSpeechDismissed(),
        onSpeechStart: (event) => this.onCallerSpeechStart(event?.atMs),
        onSpeechStop: (event) => this.onCallerSpeechStop(event?.sinceMs),
        onSuspicionDecision: (d) => {
          if (d.decision !== 'suspected') this.metrics.suspicions.record(d.atMs, `${d.decision}: ${d.reason}`);
        },
      },
      this.log,
    );
    this.metrics.suspicions.vadStarted();
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

  protected onSetUpFailed(err: unknown): void {
    this.fail(err, 'call set-up failed');
  }

  protected callerSpeaking(): boolean {
    return this.turns.turnOpen;
  }

  // ---- turn-taking and barge-in ----
  //
  // Barge-in, from ear to clear, all of it in this section:
  //  1. Silero suspects speech (its first window above confidence and min_volume while a reply
  //     is in progress, audible or between two sentences) → onCallerSpeechSuspected. In `instant`
  //     mode the reply pauses (barge-in-pause.ts): Playout.pause() sends `clear` through the
  //     transport (carrier or room) at once; the LLM and TTS go on, and their audio waits in
  //     Playout behind the part the caller has not heard.
  //  2. Silero confirms start_secs of speech → onCallerSpeechStart. The turn controller decides
  //     whether speech interrupts (min words from interims, never a backchannel) and answers
  //     'barge-in' → onTurnDecision → interrupt() → reply.end('interrupted'): the reply's abort
  //     stops the LLM, the TTS and any retry, Playout.clear() drops the audio (and sends `clear`
  //     unless paused), and the context keeps what was heard.
  //  3. Not speech after all (dismissed: a cough, a clatter; or speech that did not interrupt: a
  //     backchannel, a turn with no words) → resumeReply(): Playout.resume() sends the reply again
  //     from the heard point, and the context records it as spoken when it ends.
  // In `confirmed` mode step 1 does nothing: the bot talks on until step 2.

  private onCallerSpeechSuspected(atMs: number | undefined): void {
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
      this.metrics.suspicions.record(atMs, `not paused: ${skipped}`);
      return;
    }
    this.metrics.suspicions.record(atMs, this.bargeInPause.pause());
  }

  private onCallerSpeechDismissed(): void {
    this.log.debug({ turnOpen: this.turns.turnOpen }, 'suspected speech dismissed');
    // Only a suspicion nothing else took over: once VAD confirmed speech, the turn decides.
    if (!this.turns.turnOpen) this.resumeReply('noise');
  }

  /** Step 3: the caller did not interrupt after all; play on from the first unheard word. */
  private resumeReply(cause: 'noise' | 'no-turn'): void {
    if (!this.reply || this.ended) return;
    this.bargeInPause.resume(cause);
  }

  private onCallerSpeechStart(atMs: number | undefined): void {
    this.metrics.suspicions.record(atMs, 'speech-start');
    this.deps.events?.onUserSpeaking?.(true);
    this.turns.onVadStart();
  }

  private onCallerSpeechStop(speechEndMs: number | undefined): void {
    this.vadStopAtMs = this.deps.clock.now();
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

  /** Barge-in (step 2 above): the reply ends, keeping in the context only what was heard. */
  private interrupt(cause: 'speech' | 'dtmf'): void {
    const reply = this.reply;
    const ended = reply?.end('interrupted');
    if (!reply || !ended) return;
    this.deps.record?.replyCut(reply.timings, ended.heardMs, reply.audioMs, ended.keptText);
    this.log.info(
      {
        cause,
        heardMs: ended.heardMs,
        sentMs: ended.sentMs,
        clearSent: ended.clearSent,
        heardChars: ended.keptText.length,
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
    const parts = this.roundsParts();
    this.startReply(kind, false, this.tts!, (_session, reply, ctx, history) => modelRounds(parts, reply, ctx, history));
  }

  private roundsParts(): ModelRoundsParts {
    return {
      llm: this.llm!,
      conversation: this.conversation!,
      tools: this.tools!,
      maxRounds: maxToolRounds(this.settings!.llm),
      events: this.deps.events,
      log: () => this.log,
      onEndCallAction: (reply) => this.endAfterReply(reply, 'end_call'),
    };
  }

  // ---- functions the bot answers itself ----

  private builtInTool(name: BuiltInTool): ToolHandler | undefined {
    return builtInTool(name, {
      endAfterAnswer: (reason, then) => (this.reply ? this.endAfterReply(this.reply, reason, then) : false),
      transfer: this.call.canTransfer
        ? { refusal: (target) => this.deps.transferRefusal?.(target), start: (target) => this.call.transfer(target) }
        : undefined,
      sendDigits: this.reachesPhone ? (digits, signal) => this.playDigits(digits, signal) : undefined,
    });
  }

  /** A phone hears the bot: a phone call, or a room that dials out (its legs hear the bot's audio as sent). */
  private get reachesPhone(): boolean {
    return this.call.onPhone || (this.config.body.dialout_settings?.length ?? 0) > 0;
  }

  /**
   * send_dtmf: the keys' tones go out in the reply that pressed them, after what the bot said
   * before the call has been heard, and the function answers once they have been played, so the
   * model's next pass comes after the other party got them. In-band tones reach the called party
   * through any carrier, without touching the call's TwiML (which would end the media stream).
   */
  private async playDigits(digits: string, signal: AbortSignal): Promise<void> {
    const reply = this.reply;
    if (!reply?.live) throw new Error('the answer that pressed the keys had already ended');
    await this.untilReplyQuiet(reply, signal);
    reply.enqueue(dtmfToneMulaw(digits));
    await this.untilReplyQuiet(reply, signal);
  }

  /** Resolves once `reply` has had no new audio for a moment and the carrier played all it got. */
  private untilReplyQuiet(reply: Reply, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      let audioMs = reply.audioMs;
      const { clock } = this.deps;
      let quietSinceMs = clock.now();
      const timer = clock.setInterval(() => {
        if (signal.aborted || !reply.live) {
          clock.clearInterval(timer);
          reject(new Error('the answer was cut off before the keys were played'));
          return;
        }
        const now = clock.now();
        if (reply.audioMs !== audioMs || this.playout.audible) {
          audioMs = reply.audioMs;
          quietSinceMs = now;
        } else if (now - quietSinceMs >= DIGITS_QUIET_MS) {
          clock.clearInterval(timer);
          resolve();
        }
      }, FRAME_MS);
    });
  }

  /**
   * The call ends once `reply` has played (the model's goodbye is part of it): no new turn starts
   * and the caller cannot cut the goodbye off. `then` replaces the hang-up (a transfer).
   */
  private endAfterReply(reply: Reply, reason: string, then?: () => void): boolean {
    if (!reply.live) return false;
    return this.call.endWith(reason, () => {
      reply.markEndsCall();
      this.afterLastReply = then;
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
    this.turnCount += 1;
    const afterCallerSpoke = kind === 'answer' && this.vadStopAtMs !== undefined;
    const originMs = afterCallerSpoke ? this.vadStopAtMs! : this.deps.clock.now();
    this.vadStopAtMs = undefined;
    const reply = new Reply(this.replyParts(), { kind, turn: this.turnCount, originMs, endsCall });
    this.reply = reply;
    if (kind === 'answer' || kind === 'dtmf' || kind === 'greeting') this.deadline.owe(originMs);
    this.deps.record?.replyStarted(reply.timings, originMs, afterCallerSpoke);
    const ctx = this.context(AbortSignal.any([this.call.abort.signal, reply.abort.signal]));
    this.runReply(reply, tts, this.queuedPieces(reply, text(this, reply, ctx, history)), ctx).catch((err: unknown) =>
      this.fail(err, 'reply failed'),
    );
  }

  private replyParts(): ReplyParts {
    return {
      playout: this.playout,
      conversation: this.conversation,
      metrics: this.metrics,
      events: this.deps.events,
      turns: this.turns,
      onEnded: (reply, cause, ended) => this.onReplyEnded(reply, cause, ended),
    };
  }

  /** Every reply's end, whatever ended it. */
  private onReplyEnded(reply: Reply, cause: ReplyEndCause, _ended: ReplyEnded): void {
    if (this.reply === reply) this.reply = undefined;
    this.bargeInPause.cancel();
    if (cause !== 'played' || !reply.endsCall) return;
    if (this.afterLastReply) this.afterLastReply();
    else this.call.endCall();
  }

  /** The reply's pieces on their way to the voice, noted so an interruption can tell which sentence was playing. */
  private async *queuedPieces(reply: Reply, pieces: AsyncIterable<string>): AsyncIterable<string> {
    for await (const piece of pieces) {
      if (reply.live) this.conversation?.notePieceQueued(piece);
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
        reply.timings.ttsFirstAudioMs ??= elapsedSince(reply.clock, reply.originMs);
        reply.enqueue(mulaw);
      } else {
        this.conversation?.notePiece(out.text, pieceStartMs, reply.audioMs);
        pieceStartMs = reply.audioMs;
      }
    }
    if (ctx.signal.aborted) return;
    const tail = converter.flush();
    if (tail.length > 0) reply.enqueue(tail);
    reply.finishAudio();
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
      // Even the apology or goodbye could not be spoken: what it has plays out (and the call ends if due).
      reply.finishAudio();
      if (reply.endsCall) this.call.endCall();
      return;
    }
    reply.end('failed');
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
    if (reply?.end('deadline')) this.deps.record?.replyCut(reply.timings, 0, reply.audioMs, '');
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

/** The llm option `max_tool_rounds`, else the default. */
function maxToolRounds(llm: Record<string, unknown>): number {
  const value = llm.max_tool_rounds;
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : DEFAULT_MAX_TOOL_ROUNDS;
}

import type { BotConfigForCall } from '../bots/bot-config-service.js';
import type { ClockTimer } from '../shared/clock.js';
import { createS2sProvider, providerSettingsFor } from './provider-settings.js';
import type { S2sEvents, S2sSession } from '../providers/s2s/types.js';
import { type ProviderError, isAbortError } from '../providers/types.js';
import { botSettings } from './bot-settings.js';
import { type CallSessionDeps, PHRASES } from './call-deps.js';
import { CallEngine } from './call-engine.js';
import { CLOSING_PHRASE_CAP_MS, HeldFrames } from './call-lifecycle.js';
import { builtInTool } from './built-in-tools.js';
import type { BuiltInTool } from './call-tools.js';
import { S2sToolBatch } from './s2s-tool-batch.js';
import type { CallVad } from '../vad/call-vad.js';
import type { ToolHandler } from './tool-types.js';
import { type TurnTimings, elapsedSince } from './call-metrics.js';
import type { CallTransport } from './call-transport.js';
import { Conversation } from './conversation.js';
import { DtmfGatherer } from './dtmf-gatherer.js';
import { speakFixedPhrase } from './fixed-phrase.js';

/** Caller frames held while the vendor's session opens (2 s). */
const MAX_PENDING_FRAMES = 100;

interface BotItem {
  id: string;
  generation: number;
  /** Audio of the item received from the vendor so far, ms. */
  receivedMs: number;
  timings: TurnTimings;
  startedAtMs: number;
}

/**
 * A phone call with a speech-to-speech model (OpenAI Realtime, Gemini Live): caller audio goes
 * straight to the vendor, the vendor's audio goes out through Playout, which tells from echoed
 * marks what the caller heard. When the vendor hears the caller start speaking over the bot, the
 * line is cleared at once and the interrupted item is truncated to the milliseconds actually
 * heard (never more than was received, counted per item, so the first turn is right too).
 *
 * In interruption mode `instant`, the local VAD pauses the bot at the first windows of plausible
 * speech (the shared barge-in pause, barge-in-pause.ts), before the vendor's own VAD says
 * `speech_started` (which then cancels the item), and resumes it when the sound was not speech.
 * Barge-in itself stays the vendor's.
 */
export class S2sCallSession extends CallEngine {
  private session: S2sSession | undefined;
  private readonly heldFrames = new HeldFrames(MAX_PENDING_FRAMES);
  private item: BotItem | undefined;
  /** Items the caller interrupted: late audio of theirs is dropped. */
  private readonly cancelled = new Set<string>();
  private readonly dtmf: DtmfGatherer;
  /** A fixed phrase (goodbye, apology) is playing; the call ends when it has. */
  private closingGeneration: number | undefined;
  /** The local VAD heard the caller speaking (its start, not yet its stop). */
  private callerSpeakingNow = false;
  /** Makes the instant pause's VAD (interruption mode `instant`), afresh after each barge-in. */
  private newVad: (() => CallVad) | undefined;
  private userSpokeAtMs: number;
  /** The model's function calls, run and answered in batches. */
  private toolBatch: S2sToolBatch | undefined;
  /**
   * Phrases said while functions run (the filler, a webhook's `tts:say`), in the server's phrase
   * voice between the vendor's items; `phraseGeneration` is the one playing.
   */
  private readonly phrases: string[] = [];
  private phraseGeneration: number | undefined;
  /** end_call or transfer_call was called: the call ends after the model's next answer. */
  private lastAnswer:
    | { reason: string; then?: () => void; afterItemId: string | undefined; capTimer: ClockTimer }
    | undefined;

  constructor(transport: CallTransport, config: BotConfigForCall, deps: CallSessionDeps) {
    super(transport, config, deps, { onReplyPlayed: (generation) => this.onPlayed(generation) });
    this.dtmf = new DtmfGatherer((digits) => this.onDtmfInput(digits), deps.clock);
    this.userSpokeAtMs = deps.clock.now();
  }

  onAudio(mulaw: Uint8Array): void {
    if (this.ended || this.ending) return;
    if (this.session) this.session.sendAudio(mulaw);
    else this.heldFrames.hold(mulaw);
    // The local VAD serves only the instant pause, which acts while the bot has an item: it hears
    // the caller from the item's first audio (their speech started then or later is what it must
    // catch) until the end of speech it heard start, or until the barge-in that speech made (the
    // VAD starts afresh then, see interrupt()). The rest of the call (the caller's turns while the
    // bot is silent: about half their speech) is the vendor's VAD's alone, and costs no decode, no
    // windows and no inference. A stretch not heard is simply not in the VAD's stream: it stops
    // hearing once the caller is quiet, and picks up as the bot starts (docs/cost-per-call.md).
    if (this.item || this.callerSpeakingNow) this.hearCaller(mulaw);
  }

  onDtmf(digit: string): void {
    if (this.ended || this.ending) return;
    this.metrics.dtmfDigits += 1;
    if (this.item) this.interrupt('dtmf');
    else this.stopPhrases();
    this.dtmf.press(digit);
  }

  onEnd(reason: string): void {
    if (this.item && !this.ended)
      this.deps.record?.replyCut(this.item.timings, this.playout.heardMs(), this.item.receivedMs);
    if (!this.finishCore(reason)) return;
    this.dtmf.dispose();
    this.toolBatch?.dispose();
    this.deps.clock.clearTimeout(this.lastAnswer?.capTimer);
    const session = this.session;
    this.session = undefined;
    session?.close().catch((err: unknown) => this.log.debug({ err }, 'speech-to-speech close failed'));
  }

  // ---- set-up ----

  protected onSetUpFailed(err: unknown): void {
    this.fail(err);
  }

  protected callerSpeaking(): boolean {
    return this.callerSpeakingNow;
  }

  protected async setUp(): Promise<void> {
    const body = this.config.body;
    const settings = botSettings(body);
    const llmName = body.services.llm!;
    const provider = createS2sProvider(
      body.bot_profile,
      llmName,
      providerSettingsFor(body, llmName, settings.llm, this.deps.env),
      this.deps.registry,
    );
    const history = new Conversation(settings.initialMessages).messages;
    const tools = this.createCallTools(settings.llm, (name) => this.builtInTool(name));
    this.toolBatch = new S2sToolBatch(
      tools,
      {
        send: (results) => this.session?.sendToolResults(results),
        say: (text) => this.sayBetweenItems(text),
        append: (messages) => this.session?.appendMessages(messages),
        endCall: () => {
          if (!this.endAfterAnswer('end_call')) this.log.info('streamed end-call action: the call is already ending');
        },
        log: () => this.log,
      },
      this.deps.clock,
    );
    const options = {
      history,
      tools: tools.any ? tools.offered : undefined,
      greet: settings.runOnConfig,
      model: typeof settings.llm.model === 'string' ? settings.llm.model : undefined,
      voice: typeof settings.llm.voice === 'string' ? settings.llm.voice : undefined,
    };
    this.call.armMaxDuration(settings.maxDurationSecs, () =>
      this.endWithGoodbye('max_duration', 1000, PHRASES.goodbye),
    );
    if (settings.interruption.mode === 'instant') {
      const vadParams = settings.vad;
      this.newVad = () =>
        this.deps.createVad(
          vadParams,
          {
            onSpeechSuspected: () => this.onSpeechSuspected(),
            onSpeechDismissed: () => {
              if (!this.callerSpeakingNow) this.resume('noise');
            },
            onSpeechStart: () => {
              this.callerSpeakingNow = true;
            },
            onSpeechStop: () => {
              this.callerSpeakingNow = false;
            },
          },
          this.log,
        );
      this.vad = this.newVad();
    }
    const session = await provider.open(
      { signal: this.call.abort.signal, log: this.log },
      options,
      this.vendorEvents(),
    );
    if (this.ended) {
      await session.close();
      return;
    }
    this.session = session;
    this.heldFrames.release((frame) => session.sendAudio(frame));
  }

  private vendorEvents(): S2sEvents {
    return {
      onAudio: (itemId, mulaw) => this.onBotAudio(itemId, mulaw),
      onItemDone: (itemId) => {
        if (this.item?.id === itemId) this.playout.endReply(this.item.generation);
      },
      onSpeechStarted: () => {
        this.userSpokeAtMs = this.deps.clock.now();
        this.deps.events?.onUserSpeaking?.(true);
        if (this.item && (this.playout.audible || this.playout.paused)) this.interrupt('speech');
        else this.stopPhrases();
      },
      onUserTranscript: (text) => {
        this.deps.events?.onUserSpeaking?.(false);
        this.deps.events?.onUserTranscript?.(text, true);
      },
      onBotTranscript: (_itemId, text) => this.deps.events?.onBotText?.(text),
      onToolCall: (call) => this.toolBatch?.onToolCall(call),
      onError: (error) => this.onVendorLost(error),
    };
  }

  // ---- the bot's audio ----

  private onBotAudio(itemId: string, mulaw: Uint8Array): void {
    if (this.ended || this.ending || this.cancelled.has(itemId)) return;
    if (this.item?.id !== itemId) {
      // The model's answer has come: a phrase said while it waited has done its job.
      this.phrases.length = 0;
      this.phraseGeneration = undefined;
      // A new item: its own generation, so its heard time starts from zero.
      const timings: TurnTimings = {
        turn: this.metrics.turns.length + 1,
        kind: this.metrics.turns.length === 0 ? 'greeting' : 'answer',
        interrupted: false,
      };
      timings.ttsFirstAudioMs = elapsedSince(this.deps.clock, this.userSpokeAtMs);
      this.metrics.turns.push(timings);
      this.deps.record?.replyStarted(timings, this.userSpokeAtMs, timings.kind === 'answer');
      this.item = {
        id: itemId,
        generation: this.playout.startReply(),
        receivedMs: 0,
        timings,
        startedAtMs: this.deps.clock.now(),
      };
      this.deps.events?.onBotSpeaking?.(true);
      if (timings.kind === 'answer') this.deps.events?.onTurnLatency?.(timings.ttsFirstAudioMs);
    }
    const item = this.item;
    item.receivedMs += mulaw.length / 8;
    this.playout.enqueue(item.generation, mulaw);
    item.timings.firstFrameSentMs ??= elapsedSince(this.deps.clock, this.userSpokeAtMs);
  }

  private onPlayed(generation: number): void {
    if (this.closingGeneration === generation) {
      this.call.endCall();
      return;
    }
    if (this.phraseGeneration === generation) {
      this.phraseGeneration = undefined;
      this.nextPhrase();
      return;
    }
    if (this.item?.generation === generation) {
      const item = this.item;
      this.item = undefined;
      this.deps.events?.onBotSpeaking?.(false);
      const last = this.lastAnswer;
      if (last && item.id !== last.afterItemId) {
        // The model's answer after end_call or transfer_call (its goodbye) has played.
        this.lastAnswer = undefined;
        this.deps.clock.clearTimeout(last.capTimer);
        if (last.then) last.then();
        else this.call.endCall(last.reason);
      }
      this.nextPhrase();
    }
  }

  // ---- phrases while functions run ----

  /**
   * Says `text` once the vendor's current item (if any) has played. Neither vendor can be made to
   * say a given text while its function call is pending without the phrase entering the model's
   * context (Gemini Live holds the turn until the toolResponse), so the server's phrase voice
   * says it, as it says the goodbye.
   */
  private sayBetweenItems(text: string): void {
    if (this.ending || this.ended) return;
    this.phrases.push(text);
    this.nextPhrase();
  }

  private nextPhrase(): void {
    if (this.item || this.phraseGeneration !== undefined || this.ending || this.ended) return;
    const text = this.phrases.shift();
    if (text === undefined) return;
    const generation = this.playout.startReply();
    this.phraseGeneration = generation;
    this.deps.events?.onBotText?.(text);
    this.log.info({ text }, 'saying a phrase while functions run');
    speakFixedPhrase(this.playout, generation, this.deps.fallbackTts(), text, this.call.abort.signal, this.log).catch(
      (err: unknown) => {
        this.log.warn({ err }, 'could not say the phrase');
        if (this.phraseGeneration === generation) this.phraseGeneration = undefined;
      },
    );
  }

  /** The caller spoke or keyed over a phrase: the line is cleared, the rest is not said. */
  private stopPhrases(): void {
    this.phrases.length = 0;
    if (this.phraseGeneration === undefined) return;
    this.phraseGeneration = undefined;
    this.playout.clear();
  }

  // ---- functions the bot answers itself ----

  private builtInTool(name: BuiltInTool): ToolHandler | undefined {
    return builtInTool(name, {
      endAfterAnswer: (reason, then) => this.endAfterAnswer(reason, then),
      transfer: this.call.canTransfer
        ? { refusal: (target) => this.deps.transferRefusal?.(target), start: (target) => this.call.transfer(target) }
        : undefined,
      sendDigits: undefined,
    });
  }

  /**
   * The call ends once the model's next answer (the one after the function's result, with its
   * goodbye) has played, or after CLOSING_PHRASE_CAP_MS if it never comes. The vendor's audio
   * still plays meanwhile, so the lifecycle is told only when the call ends.
   */
  private endAfterAnswer(reason: string, then?: () => void): boolean {
    if (this.ending || this.lastAnswer) return false;
    const capTimer = this.deps.clock.setTimeout(() => {
      this.lastAnswer = undefined;
      if (then) then();
      else this.call.endCall(reason);
    }, CLOSING_PHRASE_CAP_MS);
    this.lastAnswer = { reason, then, afterItemId: this.item?.id, capTimer };
    return true;
  }

  /** Suspected speech over the bot (local VAD): the line is cleared at once, the item's audio waits. */
  private onSpeechSuspected(): void {
    if (!this.item || this.ending || !this.playout.audible) return;
    this.bargeInPause.pause();
  }

  /** Not speech after all (or not to the vendor): the item plays on from the heard point. */
  private resume(cause: string): void {
    if (!this.item || this.ended) return;
    this.bargeInPause.resume(cause);
  }

  /** Barge-in: clear the line, and make the vendor keep only what the caller heard of the item. */
  private interrupt(cause: 'speech' | 'dtmf'): void {
    const item = this.item;
    if (!item) return;
    this.item = undefined;
    this.bargeInPause.cancel();
    this.toolBatch?.interrupt();
    const cleared = this.playout.clear();
    const heardMs = Math.min(cleared.heardMs, item.receivedMs);
    item.timings.interrupted = true;
    this.deps.record?.replyCut(item.timings, heardMs, item.receivedMs);
    this.deps.events?.onBotSpeaking?.(false);
    this.cancelled.add(item.id);
    this.metrics.bargeIns += 1;
    // The pause has done its work for this item: the rest of the caller's turn (most of the speech
    // the VAD would run) is the vendor's to hear. A fresh VAD hears the next item from its start.
    if (this.newVad && this.vad) {
      this.vad.dispose();
      this.vad = this.newVad();
      this.callerSpeakingNow = false;
    }
    this.session?.interrupt(item.id, heardMs);
    this.log.info(
      { cause, itemId: item.id, heardMs, receivedMs: Math.round(item.receivedMs), clearSent: cleared.cleared },
      'caller interrupted the bot',
    );
  }

  private onDtmfInput(digits: string): void {
    if (this.ending || this.ended) return;
    this.userSpokeAtMs = this.deps.clock.now();
    this.session?.sendText(`DTMF: ${digits}`);
  }

  // ---- ending ----

  /**
   * Ends the call the way max_duration does: the bot's current item is cut, the offline voice says
   * `text`, and the stream closes with `closeCode` and `reason`. A call not yet started closes at
   * once; one already ending ends as it was going to.
   */
  endWithGoodbye(reason: string, closeCode: number, text: string = PHRASES.goodbye): void {
    if (this.ending) return;
    this.call.setCloseCode(closeCode);
    if (!this.call.hasStarted) {
      this.call.endCall(reason);
      return;
    }
    this.call.endWith(reason, () => this.cutAndSay(text));
  }

  private onVendorLost(error: ProviderError): void {
    if (this.ended) return;
    this.metrics.providerErrors += 1;
    this.log.error(
      { provider: error.provider, error: error.message },
      'speech-to-speech session lost; ending the call',
    );
    this.session = undefined;
    this.call.endWith('error', () => this.cutAndSay(PHRASES.unavailable));
  }

  private fail(err: unknown): void {
    if (this.ended || isAbortError(err)) return;
    this.metrics.providerErrors += 1;
    this.log.error({ err }, 'call set-up failed');
    this.call.endWith('error', () => this.cutAndSay(PHRASES.unavailable));
  }

  /** Cuts the bot's item and says a closing phrase with the offline voice; its end ends the call. */
  private cutAndSay(text: string): void {
    if (this.item) this.interrupt('speech');
    const generation = this.playout.startReply();
    this.closingGeneration = generation;
    speakFixedPhrase(this.playout, generation, this.deps.fallbackTts(), text, this.call.abort.signal, this.log).catch(
      (err: unknown) => {
        this.log.error({ err }, 'could not speak the closing phrase');
        this.call.endCall('error');
      },
    );
  }
}

import type { Logger } from 'pino';
import { decodeMulaw } from '../audio/mulaw.js';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import type { CallVad } from '../vad/call-vad.js';
import { BargeInPause } from './barge-in-pause.js';
import type { CallSessionDeps } from './call-deps.js';
import { CallLifecycle } from './call-lifecycle.js';
import type { CallMetrics } from './call-metrics.js';
import type { CallStart, CallTransport, CallTransportHandler } from './call-transport.js';
import { CALL_PACING, Playout, type PlayoutEvents } from './playout.js';
import type { WebhookToolSettings } from '../bots/bot-config-schema.js';
import { createWebhookToolRunner } from '../functions/index.js';
import { type BuiltInTool, CallTools, type CallToolsConfig } from './call-tools.js';
import type { ToolHandler } from './tool-types.js';

/**
 * The core every bot call shares, whichever engine answers (`CallSession`: VAD + STT → LLM → TTS;
 * `S2sCallSession`: one speech-to-speech vendor): the lifecycle (start, max_duration, ending,
 * summary), Playout on the shared clock, the local VAD's feed, and the barge-in pause. An engine
 * adds how it listens and answers.
 */
export abstract class CallEngine implements CallTransportHandler {
  protected readonly call: CallLifecycle;
  protected readonly metrics: CallMetrics;
  protected readonly playout: Playout;
  /** Step 1 of barge-in (see barge-in-pause.ts), for every engine. */
  protected readonly bargeInPause: BargeInPause;
  /** The local VAD (Silero), when the engine listens with it. */
  protected vad: CallVad | undefined;
  private pcm = new Int16Array(160);

  constructor(
    transport: CallTransport,
    protected readonly config: BotConfigForCall,
    protected readonly deps: CallSessionDeps,
    playoutEvents: PlayoutEvents,
  ) {
    const pacing = transport.pacing ?? CALL_PACING;
    this.playout = new Playout(transport, playoutEvents, {
      leadMs: deps.leadMs ?? pacing.leadMs,
      framesPerWrite: pacing.framesPerWrite,
      now: () => deps.clock.now(),
    });
    this.call = new CallLifecycle(transport, config, this.playout, deps);
    this.metrics = this.call.metrics;
    this.bargeInPause = new BargeInPause({
      playout: this.playout,
      metrics: this.metrics,
      log: () => this.log,
      callerSpeaking: () => this.callerSpeaking(),
    });
  }

  protected get log(): Logger {
    return this.call.log;
  }

  protected get ending(): boolean {
    return this.call.ending;
  }

  protected get ended(): boolean {
    return this.call.ended;
  }

  onStart(start: CallStart): void {
    this.call.start(start);
    this.setUp().catch((err: unknown) => this.onSetUpFailed(err));
  }

  onMark(name: string): void {
    this.playout.onMarkEchoed(name);
  }

  abstract onAudio(mulaw: Uint8Array): void;
  abstract onDtmf(digit: string): void;
  abstract onEnd(reason: string): void;

  /**
   * Ends the call the way max_duration does: the bot stops what it is saying, says `text`, and
   * the stream closes with `closeCode` and `reason`.
   */
  abstract endWithGoodbye(reason: string, closeCode: number, text?: string): void;

  /** Opens the engine's providers once the transport started. */
  protected abstract setUp(): Promise<void>;

  protected abstract onSetUpFailed(err: unknown): void;

  /** The caller is speaking, or their turn is still being decided: a paused reply keeps waiting. */
  protected abstract callerSpeaking(): boolean;

  /** The functions the model may call on this call: `llm` option `tools`, `webhook_tools`, the built-ins. */
  protected createCallTools(
    llmOptions: Record<string, unknown>,
    builtIn: (name: BuiltInTool) => ToolHandler | undefined,
  ): CallTools {
    return new CallTools(
      {
        tools: llmOptions.tools as CallToolsConfig['tools'],
        webhookTools: this.config.body.webhook_tools as CallToolsConfig['webhookTools'],
      },
      {
        webhook: (_name, entry) => this.webhookRunner(entry),
        builtIn,
        client: this.deps.clientTools,
        metrics: this.metrics,
        signal: (name) => this.playout.sendSignal(name),
        log: () => this.log,
        callSignal: this.call.abort.signal,
      },
    );
  }

  private webhookRunner(entry: Record<string, unknown>): ToolHandler | undefined {
    const policy = this.deps.webhookPolicy;
    if (!policy) return undefined;
    return createWebhookToolRunner(entry as WebhookToolSettings, {
      policy,
      signingSecret: this.config.body.webhook_secret ?? '',
      log: this.log,
    });
  }

  /** A caller frame for the local VAD (decoded to PCM in one reused buffer). */
  protected hearCaller(mulaw: Uint8Array): void {
    if (!this.vad) return;
    if (this.pcm.length !== mulaw.length) this.pcm = new Int16Array(mulaw.length);
    this.vad.push(decodeMulaw(mulaw, this.pcm));
  }

  /** The leg is gone: the lifecycle's summary, then the core's timers and VAD. False if it had already ended. */
  protected finishCore(reason: string): boolean {
    if (!this.call.finish(reason)) return false;
    this.bargeInPause.cancel();
    this.vad?.dispose();
    return true;
  }
}

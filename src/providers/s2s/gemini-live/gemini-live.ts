import type { IncomingMessage } from 'node:http';
import type { EndpointGuard } from '../../endpoint.js';
import type WebSocket from 'ws';
import type { RawData } from 'ws';
import { AudioConverter, fromTelephony } from '../../../audio/format-converter.js';
import { type LlmMessage, type LlmToolCall, type ProviderContext, ProviderError } from '../../types.js';
import { toGeminiTools } from '../../tool-schemas.js';
import { LOCAL_CALL_ID_PREFIX, argumentsObject, localCallId, resultObject } from '../../llm/tool-history.js';
import { handshakeError, handshakeRefusal, isRetryableCloseCode, oneLine, redact } from '../../vendor-errors.js';
import { frameText, openVendorSocket } from '../../vendor-socket.js';
import { S2sSocketSession } from '../s2s-socket.js';
import type { S2sEvents, S2sOptions, S2sProvider, S2sSession } from '../types.js';
import { pcmRateHz, serverMessage } from './gemini-live-messages.js';

const PROVIDER = 'gemini_live';
const INPUT_RATE_HZ = 16_000;
const TELEPHONY = { encoding: 'mulaw', sampleRateHz: 8000 } as const;

export interface GeminiLiveConfig {
  /** ws(s)://host/ws/...BidiGenerateContent, without the key. */
  url: string;
  apiKey: string;
  model: string;
  voice: string;
  language: string | undefined;
  handshakeTimeoutMs: number;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * Gemini Live over its BidiGenerateContent websocket: `setup` first and wait for `setupComplete`;
 * the caller's 8 kHz mu-law goes in as 16 kHz PCM, the model's 24 kHz PCM comes back as 8 kHz
 * mu-law. Gemini has no item ids and no truncate: each model turn gets an id here, and on
 * `interrupted` the call session clears the line and the turn simply ends.
 */
export class GeminiLive implements S2sProvider {
  readonly name = PROVIDER;

  constructor(readonly config: GeminiLiveConfig) {}

  open(ctx: ProviderContext, options: S2sOptions, events: S2sEvents): Promise<S2sSession> {
    return LiveSession.connect(this.config, ctx, options, events);
  }
}

class LiveSession extends S2sSocketSession implements S2sSession {
  private readonly input = fromTelephony({ encoding: 'linear16', sampleRateHz: INPUT_RATE_HZ });
  private output: AudioConverter | undefined;
  private turn = 1;
  private turnHasAudio = false;

  private constructor(ws: WebSocket, ctx: ProviderContext, events: S2sEvents) {
    super(ws, PROVIDER, ctx, events);
  }

  static async connect(
    config: GeminiLiveConfig,
    ctx: ProviderContext,
    options: S2sOptions,
    events: S2sEvents,
  ): Promise<LiveSession> {
    const ws = openVendorSocket(`${config.url}?key=${encodeURIComponent(config.apiKey)}`, {
      timeoutMs: config.handshakeTimeoutMs,
      lookup: config.guard?.lookup,
    });
    const fail = (error: ProviderError, reject: (e: ProviderError) => void) => {
      ws.removeAllListeners('message');
      ws.terminate();
      reject(error);
    };
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          fail(new ProviderError(PROVIDER, `no setupComplete within ${config.handshakeTimeoutMs} ms`, true), reject),
        config.handshakeTimeoutMs,
      );
      ws.once('open', () => ws.send(JSON.stringify(setupMessage(config, options))));
      ws.on('message', (data) => {
        if (!frameText(data).includes('setupComplete')) return;
        clearTimeout(timer);
        ws.removeAllListeners('message');
        resolve();
      });
      ws.once('unexpected-response', (_req, res: IncomingMessage) => {
        clearTimeout(timer);
        void handshakeRefusal(PROVIDER, res, config.apiKey).then((error) => fail(error, reject));
      });
      ws.once('close', (code, reason) => {
        clearTimeout(timer);
        // Gemini refuses a bad setup (model, key) by closing with a reason.
        reject(
          new ProviderError(
            PROVIDER,
            `closed during setup (code ${code}${reason.length > 0 ? `: ${oneLine(redact(reason.toString(), config.apiKey))}` : ''})`,
            isRetryableCloseCode(code),
          ),
        );
      });
      ws.once('error', (err) => {
        clearTimeout(timer);
        fail(handshakeError(PROVIDER, err, config.handshakeTimeoutMs, config.apiKey), reject);
      });
      ctx.signal.addEventListener('abort', () => ws.terminate(), { once: true });
    });
    ws.removeAllListeners('close');
    ws.removeAllListeners('error');
    const session = new LiveSession(ws, ctx, events);
    session.start(options);
    return session;
  }

  protected sendAudioMessage(mulaw: Uint8Array): void {
    const pcm = this.input.convert(mulaw);
    this.send({
      realtimeInput: {
        audio: {
          mimeType: `audio/pcm;rate=${INPUT_RATE_HZ}`,
          data: Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64'),
        },
      },
    });
  }

  sendText(text: string): void {
    this.send({ clientContent: { turns: [{ role: 'user', parts: [{ text }] }], turnComplete: true } });
  }

  sendToolResults(results: Array<{ call: LlmToolCall; resultJson: string }>): void {
    if (results.length === 0) return;
    // One toolResponse for the batch: the model goes on once it has every result.
    this.send({
      toolResponse: {
        functionResponses: results.map(({ call, resultJson }) => ({
          ...(call.id.startsWith(LOCAL_CALL_ID_PREFIX) ? {} : { id: call.id }),
          name: call.name,
          response: resultObject(resultJson),
        })),
      },
    });
  }

  /**
   * One clientContent with turnComplete false: in the context, no answer asked for. The Live API
   * takes system instructions only at setup, so a system message goes in as a user turn.
   */
  appendMessages(messages: LlmMessage[]): void {
    const turns: Array<{ role: string; parts: Array<{ text: string }> }> = [];
    for (const message of messages) {
      if (message.role === 'tool' || !message.content.trim()) continue;
      const role = message.role === 'assistant' ? 'model' : 'user';
      const last = turns.at(-1);
      if (last?.role === role) last.parts.push({ text: message.content });
      else turns.push({ role, parts: [{ text: message.content }] });
    }
    if (turns.length > 0) this.send({ clientContent: { turns, turnComplete: false } });
  }

  interrupt(): void {
    // Gemini has no cancel or truncate: it stopped on its own (`interrupted`); audio of this turn is dropped.
    this.nextTurn();
  }

  private start(options: S2sOptions): void {
    // Earlier function calls and results travel as parts of the turns they belong to.
    const turns: Array<{ role: string; parts: Array<Record<string, unknown>> }> = [];
    for (const m of options.history) {
      if (m.role === 'system') continue;
      const role = m.role === 'assistant' ? 'model' : 'user';
      const parts: Array<Record<string, unknown>> = [];
      if (m.role === 'tool')
        parts.push({ functionResponse: { name: m.toolName ?? '', response: resultObject(m.content) } });
      else if (m.content.trim()) parts.push({ text: m.content });
      for (const call of m.role === 'assistant' ? (m.toolCalls ?? []) : [])
        parts.push({ functionCall: { name: call.name, args: argumentsObject(call) } });
      if (parts.length === 0) continue;
      const last = turns.at(-1);
      if (last?.role === role) last.parts.push(...parts);
      else turns.push({ role, parts });
    }
    if (options.greet) {
      if (turns.length === 0)
        turns.push({ role: 'user', parts: [{ text: 'The caller has just connected. Greet them.' }] });
      this.send({ clientContent: { turns, turnComplete: true } });
    } else if (turns.length > 0) {
      this.send({ clientContent: { turns, turnComplete: false } });
    }
  }

  protected onMessage(data: RawData): void {
    let json: unknown;
    try {
      // Gemini may send JSON in binary frames.
      json = JSON.parse(frameText(data));
    } catch {
      this.ctx.log.debug({ provider: PROVIDER }, 'skipped a frame that is not JSON');
      return;
    }
    const parsed = serverMessage.safeParse(json);
    if (!parsed.success) return;
    const content = parsed.data.serverContent;
    if (parsed.data.goAway)
      this.ctx.log.warn(
        { provider: PROVIDER, timeLeft: parsed.data.goAway.timeLeft },
        'gemini live will close the session soon',
      );
    for (const call of parsed.data.toolCall?.functionCalls ?? [])
      this.events.onToolCall({
        id: call.id ?? localCallId(),
        name: call.name,
        argumentsJson: JSON.stringify(call.args ?? {}),
      });
    if (parsed.data.toolCallCancellation)
      this.ctx.log.info(
        { provider: PROVIDER, ids: parsed.data.toolCallCancellation.ids },
        'gemini live cancelled function calls (their results still go back when they arrive)',
      );
    if (!content) return;
    if (content.interrupted) {
      this.events.onSpeechStarted();
      return;
    }
    for (const part of content.modelTurn?.parts ?? []) {
      const inline = part.inlineData;
      if (!inline?.mimeType.startsWith('audio/pcm')) continue;
      const rateHz = pcmRateHz(inline.mimeType);
      if (!this.output || this.output.from.sampleRateHz !== rateHz)
        this.output = new AudioConverter({ encoding: 'linear16', sampleRateHz: rateHz }, TELEPHONY);
      const mulaw = this.output.convert(Buffer.from(inline.data, 'base64'));
      if (mulaw.length === 0) continue;
      this.turnHasAudio = true;
      this.events.onAudio(this.turnId(), mulaw);
    }
    if (content.outputTranscription?.text) this.events.onBotTranscript(this.turnId(), content.outputTranscription.text);
    if (content.inputTranscription?.text && content.inputTranscription.finished !== false)
      this.events.onUserTranscript(content.inputTranscription.text);
    // turnComplete may wait for playback; generationComplete says the audio is all here.
    if (content.generationComplete || content.turnComplete) {
      if (this.turnHasAudio) {
        const tail = this.output?.flush();
        if (tail && tail.length > 0) this.events.onAudio(this.turnId(), tail);
        this.events.onItemDone(this.turnId());
      }
      this.nextTurn();
    }
  }

  private nextTurn(): void {
    if (!this.turnHasAudio) return;
    this.turn += 1;
    this.turnHasAudio = false;
  }

  private turnId(): string {
    return `turn-${this.turn}`;
  }
}

function setupMessage(config: GeminiLiveConfig, options: S2sOptions): Record<string, unknown> {
  const instructions = options.history
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  return {
    setup: {
      model: config.model.startsWith('models/') ? config.model : `models/${config.model}`,
      generationConfig: {
        responseModalities: ['AUDIO'],
        speechConfig: {
          voiceConfig: { prebuiltVoiceConfig: { voiceName: config.voice } },
          ...(config.language ? { languageCode: config.language } : {}),
        },
      },
      ...(instructions ? { systemInstruction: { parts: [{ text: instructions }] } } : {}),
      ...(options.tools && options.tools.length > 0 ? { tools: toGeminiTools(options.tools) } : {}),
      realtimeInputConfig: {
        automaticActivityDetection: { disabled: false },
        activityHandling: 'START_OF_ACTIVITY_INTERRUPTS',
      },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
    },
  };
}

import type { IncomingMessage } from 'node:http';
import type { EndpointGuard } from '../../endpoint.js';
import type WebSocket from 'ws';
import type { RawData } from 'ws';
import type { LlmMessage, LlmToolCall, ProviderContext, ProviderError } from '../../types.js';
import { openAiToolFunction } from '../../tool-schemas.js';
import { handshakeError, handshakeRefusal } from '../../vendor-errors.js';
import { frameText, openVendorSocket } from '../../vendor-socket.js';
import { S2sSocketSession } from '../s2s-socket.js';
import type { S2sEvents, S2sOptions, S2sProvider, S2sSession } from '../types.js';
import {
  AUDIO_DELTA,
  AUDIO_DONE,
  HARMLESS_ERROR_CODES,
  type RealtimeProtocol,
  TRANSCRIPT_DONE,
  audioDone,
  errorEvent,
  functionCallItem,
  inputTranscription,
  outputItemDone,
  transcriptDone,
} from './openai-realtime-messages.js';

const PROVIDER = 'openai_realtime';

export interface OpenAiRealtimeConfig {
  /** ws(s)://host/v1/realtime, without the query. */
  url: string;
  apiKey: string;
  protocol: RealtimeProtocol;
  model: string;
  voice: string;
  handshakeTimeoutMs: number;
  /** Merged into the session (e.g. turn_detection tuning). */
  sessionExtras: Record<string, unknown>;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * OpenAI Realtime over its websocket. The phone's 8 kHz mu-law goes in and comes out untouched
 * (`audio/pcmu` in the current protocol, `g711_ulaw` in the beta). The server's VAD detects the
 * caller and cancels its own response; the call session then truncates the assistant item to
 * what the caller heard.
 */
export class OpenAiRealtime implements S2sProvider {
  readonly name = PROVIDER;

  constructor(readonly config: OpenAiRealtimeConfig) {}

  open(ctx: ProviderContext, options: S2sOptions, events: S2sEvents): Promise<S2sSession> {
    return RealtimeSession.connect(this.config, ctx, options, events);
  }
}

class RealtimeSession extends S2sSocketSession implements S2sSession {
  private constructor(
    ws: WebSocket,
    private readonly config: OpenAiRealtimeConfig,
    ctx: ProviderContext,
    events: S2sEvents,
  ) {
    super(ws, PROVIDER, ctx, events);
  }

  static async connect(
    config: OpenAiRealtimeConfig,
    ctx: ProviderContext,
    options: S2sOptions,
    events: S2sEvents,
  ): Promise<RealtimeSession> {
    const headers: Record<string, string> = { Authorization: `Bearer ${config.apiKey}` };
    if (config.protocol === 'beta') headers['OpenAI-Beta'] = 'realtime=v1';
    const ws = openVendorSocket(`${config.url}?model=${encodeURIComponent(config.model)}`, {
      headers,
      timeoutMs: config.handshakeTimeoutMs,
      lookup: config.guard?.lookup,
    });
    await new Promise<void>((resolve, reject) => {
      const fail = (error: ProviderError) => {
        ws.removeAllListeners('open');
        reject(error);
      };
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (_req, res: IncomingMessage) => {
        void handshakeRefusal(PROVIDER, res, config.apiKey).then((error) => {
          fail(error);
          ws.terminate();
        });
      });
      ws.once('error', (err) => fail(handshakeError(PROVIDER, err, config.handshakeTimeoutMs, config.apiKey)));
      ctx.signal.addEventListener('abort', () => ws.terminate(), { once: true });
    });
    const session = new RealtimeSession(ws, config, ctx, events);
    session.configure(options);
    return session;
  }

  protected sendAudioMessage(mulaw: Uint8Array): void {
    this.send({
      type: 'input_audio_buffer.append',
      audio: Buffer.from(mulaw.buffer, mulaw.byteOffset, mulaw.byteLength).toString('base64'),
    });
  }

  sendText(text: string): void {
    this.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] },
    });
    this.send({ type: 'response.create' });
  }

  sendToolResults(results: Array<{ call: LlmToolCall; resultJson: string }>): void {
    if (results.length === 0) return;
    for (const { call, resultJson } of results)
      this.send({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: call.id, output: resultJson },
      });
    // One response for the whole batch: the model answers once, knowing every result.
    this.send({ type: 'response.create' });
  }

  /** One message item each; no response.create, so the model reads them with the next turn. */
  appendMessages(messages: LlmMessage[]): void {
    const assistantContentType = this.config.protocol === 'ga' ? 'output_text' : 'text';
    for (const message of messages) {
      if (message.role === 'tool' || !message.content.trim()) continue;
      const contentType = message.role === 'assistant' ? assistantContentType : 'input_text';
      this.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: message.role, content: [{ type: contentType, text: message.content }] },
      });
    }
  }

  interrupt(itemId: string, heardMs: number): void {
    // The server's VAD has usually cancelled already; a second cancel only earns a harmless error.
    this.send({ type: 'response.cancel' });
    this.send({
      type: 'conversation.item.truncate',
      item_id: itemId,
      content_index: 0,
      audio_end_ms: Math.max(0, Math.round(heardMs)),
    });
  }

  private configure(options: S2sOptions): void {
    const { protocol, voice, model } = this.config;
    const instructions = options.history
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n\n');
    const turnDetection = {
      type: 'server_vad',
      threshold: 0.5,
      prefix_padding_ms: 300,
      silence_duration_ms: 500,
      create_response: true,
      interrupt_response: true,
    };
    const session =
      protocol === 'ga'
        ? {
            type: 'realtime',
            model,
            output_modalities: ['audio'],
            instructions,
            audio: {
              input: {
                format: { type: 'audio/pcmu' },
                turn_detection: turnDetection,
                transcription: { model: 'gpt-4o-mini-transcribe' },
              },
              output: { format: { type: 'audio/pcmu' }, voice },
            },
          }
        : {
            modalities: ['audio', 'text'],
            instructions,
            voice,
            input_audio_format: 'g711_ulaw',
            output_audio_format: 'g711_ulaw',
            input_audio_transcription: { model: 'whisper-1' },
            turn_detection: turnDetection,
          };
    const tools = realtimeTools(options.tools);
    this.send({
      type: 'session.update',
      session: {
        ...session,
        ...(tools.length > 0 ? { tools, tool_choice: 'auto' } : {}),
        ...this.config.sessionExtras,
      },
    });
    const assistantContentType = protocol === 'ga' ? 'output_text' : 'text';
    for (const message of options.history) {
      if (message.role === 'system') continue;
      if (message.role === 'tool') {
        this.send({
          type: 'conversation.item.create',
          item: { type: 'function_call_output', call_id: message.toolCallId, output: message.content },
        });
        continue;
      }
      if (message.content.trim()) {
        const contentType = message.role === 'user' ? 'input_text' : assistantContentType;
        this.send({
          type: 'conversation.item.create',
          item: { type: 'message', role: message.role, content: [{ type: contentType, text: message.content }] },
        });
      }
      for (const call of message.role === 'assistant' ? (message.toolCalls ?? []) : [])
        this.send({
          type: 'conversation.item.create',
          item: { type: 'function_call', call_id: call.id, name: call.name, arguments: call.argumentsJson },
        });
    }
    if (options.greet) this.send({ type: 'response.create' });
  }

  protected onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) return;
    let json: unknown;
    try {
      json = JSON.parse(frameText(data));
    } catch {
      this.ctx.log.debug({ provider: PROVIDER }, 'skipped a frame that is not JSON');
      return;
    }
    // Audio deltas are most of what comes (a few a second per call while the bot talks): checked
    // by hand; every other event goes through its schema.
    const type = (json as { type?: unknown } | null)?.type;
    if (typeof type !== 'string') return;
    const protocol = this.config.protocol;
    if (type === AUDIO_DELTA[protocol]) {
      const { item_id: itemId, delta } = json as { item_id?: unknown; delta?: unknown };
      if (typeof itemId === 'string' && typeof delta === 'string')
        this.events.onAudio(itemId, Buffer.from(delta, 'base64'));
    } else if (type === AUDIO_DONE[protocol]) {
      const event = audioDone.safeParse(json);
      if (event.success) this.events.onItemDone(event.data.item_id);
    } else if (type === 'response.output_item.done') {
      // A function call is complete (arguments joined) once its item is done.
      const event = outputItemDone.safeParse(json);
      const item = event.success ? functionCallItem.safeParse(event.data.item) : undefined;
      if (item?.success)
        this.events.onToolCall({
          id: item.data.call_id,
          name: item.data.name,
          argumentsJson: item.data.arguments || '{}',
        });
    } else if (type === 'input_audio_buffer.speech_started') {
      this.events.onSpeechStarted();
    } else if (type === 'input_audio_buffer.speech_stopped') {
      this.vendorEndedSpeech();
    } else if (type === TRANSCRIPT_DONE[protocol]) {
      const event = transcriptDone.safeParse(json);
      if (event.success) this.events.onBotTranscript(event.data.item_id, event.data.transcript);
    } else if (type === 'conversation.item.input_audio_transcription.completed') {
      const event = inputTranscription.safeParse(json);
      if (event.success) this.events.onUserTranscript(event.data.transcript);
    } else if (type === 'error') {
      const event = errorEvent.safeParse(json);
      const code = event.success ? (event.data.error.code ?? undefined) : undefined;
      const message = event.success ? event.data.error.message : undefined;
      if (code && HARMLESS_ERROR_CODES.has(code))
        this.ctx.log.debug({ provider: PROVIDER, code }, 'realtime race reported');
      else this.ctx.log.warn({ provider: PROVIDER, code, message }, 'realtime error event');
    }
  }
}

/** OpenAI function-format tools in the Realtime session's flat shape (`{type, name, description, parameters}`). */
function realtimeTools(tools: Array<Record<string, unknown>> | undefined): Array<Record<string, unknown>> {
  return (tools ?? []).map((tool) => {
    const fn = openAiToolFunction(tool);
    if (!fn) return tool;
    return {
      type: 'function',
      name: fn.name,
      ...(fn.description ? { description: fn.description } : {}),
      parameters: fn.parameters ?? { type: 'object', properties: {} },
    };
  });
}

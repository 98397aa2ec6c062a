import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import { decodeMulaw } from '../../audio/mulaw.js';
import {
  EmulatorSessions,
  ToneStream,
  bearer,
  frameText,
  header,
  pushBounded,
  send,
  speechDurationMs,
  writeHttpError,
} from './emulator-kit.js';
import { type EmulatedReply, type EmulatedToolResult, fragments } from './llm-emulator-base.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';

/**
 * OpenAI Realtime, emulated (docs/providers.md section 7): `/v1/realtime` websocket, Bearer key, the
 * current protocol or the beta (`OpenAI-Beta: realtime=v1`, whose audio events are named
 * `response.audio.*`). Caller audio (8 kHz mu-law) is judged by energy per 20 ms: 100 ms of speech
 * gives `input_audio_buffer.speech_started` (cancelling a response in progress, as
 * `interrupt_response` does), 500 ms of silence after it `speech_stopped`, `committed`, a
 * transcription, and a new response. A response speaks its reply text as a mu-law tone, 60 ms per
 * character, after llmFirstTokenMs + ttsFirstByteMs, at ttsRealTimeFactor. `response.cancel` ends
 * the response with `status: "cancelled"` (or answers `response_cancel_not_active`);
 * `conversation.item.truncate` is checked against the audio the item actually sent.
 *
 * Function calling: a reply with tool calls adds, after its spoken text, one `function_call`
 * output item per call (`response.output_item.added`, `response.function_call_arguments.delta`
 * fragments, `.done`, `response.output_item.done`), then `response.done`. The client answers with
 * `conversation.item.create {type: "function_call_output", call_id, output}` (a call_id the
 * conversation does not hold is an error event) and `response.create`, which then speaks
 * `afterToolResults`. `session.update` tools must be `{type: "function", name, parameters}`.
 */

export interface OpenAiRealtimeEmulatorOptions {
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  /** Replies in turn, per connection. Default "Hello, how can I help you today?". */
  replies?: EmulatedReply[];
  /** The reply to a response.create that follows function_call_output items (default: the next of `replies`). */
  afterToolResults?: EmulatedReply | ((results: EmulatedToolResult[]) => EmulatedReply);
  /** Transcripts of the caller's turns, in turn. Default "hello". */
  transcripts?: string[];
  /** RMS (int16) above which 20 ms of caller audio counts as speech. Default 300. */
  speechRmsThreshold?: number;
}

export interface RecordedRealtimeConnection {
  id: number;
  protocol: 'ga' | 'beta';
  model: string | null;
  /** Every client event, parsed (audio appends are counted, not kept). */
  events: Array<Record<string, unknown>>;
  appendedAudioBytes: number;
  /** input_audio_buffer.append events received. */
  appendedAudioMessages: number;
  speechStarts: number;
  responses: Array<{
    id: string;
    itemId: string;
    text: string;
    status: 'in_progress' | 'completed' | 'cancelled';
    audioSentMs: number;
  }>;
  truncations: Array<{ itemId: string; audioEndMs: number; accepted: boolean }>;
  cancels: number;
  /** function_call items the model produced. */
  toolCalls: Array<{ callId: string; name: string; arguments: string }>;
  /** function_call_output items the client created. */
  toolOutputs: Array<{ callId: string; output: string }>;
  closeCode?: number;
}

const FRAME_BYTES = 160;
const SPEECH_START_FRAMES = 5;
const SILENCE_END_FRAMES = 25;

export class OpenAiRealtimeEmulator implements VendorEmulator {
  readonly vendor = 'openai_realtime';
  readonly connections: RecordedRealtimeConnection[] = [];
  private readonly latencies: EmulatorLatencies;
  private readonly sessions = new EmulatorSessions<RealtimeConnection>();
  private nextId = 1;

  constructor(private readonly options: OpenAiRealtimeEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (!url.pathname.endsWith('/v1/realtime')) return false;
    const key = bearer(req);
    if (!key || (this.options.apiKey !== undefined && key !== this.options.apiKey)) {
      writeHttpError(socket, 401, {
        error: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
      });
      return true;
    }
    const record: RecordedRealtimeConnection = {
      id: this.nextId++,
      protocol: header(req, 'openai-beta') === 'realtime=v1' ? 'beta' : 'ga',
      model: url.searchParams.get('model'),
      events: [],
      appendedAudioBytes: 0,
      appendedAudioMessages: 0,
      speechStarts: 0,
      responses: [],
      truncations: [],
      cancels: 0,
      toolCalls: [],
      toolOutputs: [],
    };
    pushBounded(this.connections, record, 200);
    this.sessions.accept(
      req,
      socket,
      head,
      record,
      (ws) => new RealtimeConnection(ws, record, this.latencies, this.options),
    );
    return true;
  }

  /** Drops every connection at once, as a vendor outage would (close code 1011). */
  dropAll(): void {
    this.sessions.dropAll();
  }

  close(): void {
    this.sessions.close();
  }
}

class RealtimeConnection {
  private response:
    | {
        id: string;
        itemId: string;
        stream: ToneStream;
        timer?: NodeJS.Timeout;
        record: RecordedRealtimeConnection['responses'][number];
      }
    | undefined;
  private readonly itemAudioMs = new Map<string, number>();
  private voicedFrames = 0;
  private silentFrames = 0;
  private inSpeech = false;
  private audioMs = 0;
  /** Where the caller's current utterance began, in ms of audio received. */
  private speechStartMs = 0;
  private carry = Buffer.alloc(0);
  private replyIndex = 0;
  private responseCount = 0;
  private transcriptIndex = 0;
  private nextItem = 1;
  private eventIdCounter = 0;
  /** Function call ids the conversation holds (made by the model or created by the client). */
  private readonly knownCalls = new Map<string, string>();
  /** Outputs created since the last response: the next response.create answers them. */
  private readonly newOutputs: EmulatedToolResult[] = [];
  private readonly thresholdSquared: number;

  constructor(
    private readonly ws: WebSocket,
    private readonly record: RecordedRealtimeConnection,
    private readonly latencies: EmulatorLatencies,
    private readonly options: OpenAiRealtimeEmulatorOptions,
  ) {
    this.thresholdSquared = (options.speechRmsThreshold ?? 300) ** 2;
    // The GA session names its type, as the SDK's RealtimeSessionCreateRequest requires.
    const session = {
      ...(record.protocol === 'ga' ? { type: 'realtime' } : {}),
      id: `sess_${record.id}`,
      object: 'realtime.session',
      model: record.model,
    };
    send(ws, { type: 'session.created', event_id: this.eventId(), session });
    ws.on('message', (data: RawData) => this.onMessage(data));
  }

  stop(): void {
    this.endResponse(undefined);
  }

  private onMessage(data: RawData): void {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(frameText(data)) as Record<string, unknown>;
    } catch {
      send(this.ws, {
        type: 'error',
        event_id: this.eventId(),
        error: { type: 'invalid_request_error', code: 'invalid_json', message: 'Expected JSON.' },
      });
      return;
    }
    switch (event.type) {
      case 'input_audio_buffer.append': {
        const audio = Buffer.from(String(event.audio ?? ''), 'base64');
        this.record.appendedAudioBytes += audio.length;
        this.record.appendedAudioMessages += 1;
        this.onAudio(audio);
        return;
      }
      case 'session.update': {
        this.record.events.push(event);
        const problem = toolsProblem((event.session as { tools?: unknown } | undefined)?.tools);
        if (problem) {
          this.error('invalid_request_error', 'missing_required_parameter', problem);
          return;
        }
        send(this.ws, { type: 'session.updated', event_id: this.eventId(), session: event.session });
        return;
      }
      case 'conversation.item.create': {
        this.record.events.push(event);
        const item = (event.item ?? {}) as Record<string, unknown>;
        if (item.type === 'function_call') this.knownCalls.set(String(item.call_id ?? ''), String(item.name ?? ''));
        if (item.type === 'function_call_output') {
          const callId = String(item.call_id ?? '');
          if (!this.knownCalls.has(callId)) {
            this.error('invalid_request_error', 'invalid_value', `Tool call ID '${callId}' not found in conversation.`);
            return;
          }
          const output = typeof item.output === 'string' ? item.output : JSON.stringify(item.output ?? '');
          this.record.toolOutputs.push({ callId, output });
          this.newOutputs.push({ name: this.knownCalls.get(callId), callId, content: output });
        }
        send(this.ws, {
          type: this.record.protocol === 'ga' ? 'conversation.item.added' : 'conversation.item.created',
          event_id: this.eventId(),
          item: event.item,
        });
        return;
      }
      case 'response.create':
        this.record.events.push(event);
        this.startResponse();
        return;
      case 'response.cancel':
        this.record.events.push(event);
        this.record.cancels += 1;
        if (this.response) this.endResponse('cancelled');
        else
          send(this.ws, {
            type: 'error',
            event_id: this.eventId(),
            error: {
              type: 'invalid_request_error',
              code: 'response_cancel_not_active',
              message: 'Cancellation failed: no active response found',
            },
          });
        return;
      case 'conversation.item.truncate': {
        this.record.events.push(event);
        const itemId = String(event.item_id ?? '');
        const audioEndMs = Number(event.audio_end_ms);
        const sentMs = this.itemAudioMs.get(itemId);
        const accepted = sentMs !== undefined && Number.isFinite(audioEndMs) && audioEndMs >= 0 && audioEndMs <= sentMs;
        this.record.truncations.push({ itemId, audioEndMs, accepted });
        if (accepted)
          send(this.ws, {
            type: 'conversation.item.truncated',
            event_id: this.eventId(),
            item_id: itemId,
            content_index: 0,
            audio_end_ms: audioEndMs,
          });
        else
          send(this.ws, {
            type: 'error',
            event_id: this.eventId(),
            error: {
              type: 'invalid_request_error',
              code: 'invalid_value',
              message: `audio_end_ms ${audioEndMs} is beyond the audio of item ${itemId} (${sentMs ?? 'unknown'} ms)`,
            },
          });
        return;
      }
      default:
        this.record.events.push(event);
    }
  }

  private onAudio(audio: Buffer): void {
    let data = this.carry.length > 0 ? Buffer.concat([this.carry, audio]) : audio;
    while (data.length >= FRAME_BYTES) {
      this.onFrame(data.subarray(0, FRAME_BYTES));
      data = data.subarray(FRAME_BYTES);
    }
    this.carry = Buffer.from(data);
  }

  private onFrame(frame: Buffer): void {
    this.audioMs += 20;
    const pcm = decodeMulaw(frame);
    let sum = 0;
    for (const sample of pcm) sum += sample * sample;
    const voiced = sum / pcm.length >= this.thresholdSquared;
    if (voiced) {
      this.voicedFrames += 1;
      this.silentFrames = 0;
      if (!this.inSpeech && this.voicedFrames >= SPEECH_START_FRAMES) {
        this.inSpeech = true;
        this.speechStartMs = this.audioMs - SPEECH_START_FRAMES * 20;
        this.record.speechStarts += 1;
        // interrupt_response: the server cancels the response in progress itself.
        if (this.response) this.endResponse('cancelled');
        send(this.ws, {
          type: 'input_audio_buffer.speech_started',
          event_id: this.eventId(),
          audio_start_ms: this.audioMs - SPEECH_START_FRAMES * 20,
          item_id: `item_in_${this.nextItem}`,
        });
      }
      return;
    }
    this.voicedFrames = 0;
    if (!this.inSpeech) return;
    this.silentFrames += 1;
    if (this.silentFrames < SILENCE_END_FRAMES) return;
    this.inSpeech = false;
    const itemId = `item_in_${this.nextItem++}`;
    send(this.ws, {
      type: 'input_audio_buffer.speech_stopped',
      event_id: this.eventId(),
      audio_end_ms: this.audioMs,
      item_id: itemId,
    });
    send(this.ws, {
      type: 'input_audio_buffer.committed',
      event_id: this.eventId(),
      item_id: itemId,
      previous_item_id: null,
    });
    const transcripts = this.options.transcripts ?? ['hello'];
    const transcript = transcripts[this.transcriptIndex++ % transcripts.length]!;
    // Usage is required on this event; a duration (seconds of speech) is what whisper-style models report.
    const usage = { type: 'duration', seconds: (this.audioMs - SILENCE_END_FRAMES * 20 - this.speechStartMs) / 1000 };
    send(this.ws, {
      type: 'conversation.item.input_audio_transcription.completed',
      event_id: this.eventId(),
      item_id: itemId,
      content_index: 0,
      transcript,
      usage,
    });
    this.startResponse();
  }

  private error(type: string, code: string, message: string): void {
    send(this.ws, { type: 'error', event_id: this.eventId(), error: { type, code, message } });
  }

  private startResponse(): void {
    if (this.response) {
      send(this.ws, {
        type: 'error',
        event_id: this.eventId(),
        error: {
          type: 'invalid_request_error',
          code: 'conversation_already_has_active_response',
          message: 'Conversation already has an active response',
        },
      });
      return;
    }
    const replies = this.options.replies ?? ['Hello, how can I help you today?'];
    const after = this.options.afterToolResults;
    const results = this.newOutputs.splice(0);
    const reply =
      after !== undefined && results.length > 0
        ? typeof after === 'function'
          ? after(results)
          : after
        : replies[this.replyIndex++ % replies.length]!;
    this.responseCount += 1;
    const text = typeof reply === 'string' ? reply : (reply.text ?? '');
    const toolCalls = typeof reply === 'string' ? [] : (reply.toolCalls ?? []);
    const id = `resp_${this.record.id}_${this.responseCount}`;
    const itemId = `item_out_${this.record.id}_${this.responseCount}`;
    const record = { id, itemId, text, status: 'in_progress' as const, audioSentMs: 0 };
    this.record.responses.push(record);
    const stream = new ToneStream(
      { encoding: 'mulaw', sampleRateHz: 8000 },
      {
        chunkMs: 100,
        realTimeFactor: this.latencies.ttsRealTimeFactor,
        firstByteMs: this.latencies.llmFirstTokenMs + this.latencies.ttsFirstByteMs,
      },
    );
    this.response = { id, itemId, stream, record };
    const beta = this.record.protocol === 'beta';
    send(this.ws, {
      type: 'response.created',
      event_id: this.eventId(),
      response: { id, object: 'realtime.response', status: 'in_progress', output: [] },
    });
    const finish = () => {
      this.sendFunctionCalls(id, toolCalls, text ? 1 : 0);
      this.endResponse('completed');
    };
    if (!text) {
      // A response that only calls functions: no message item, no audio.
      const response = this.response;
      response.timer = setTimeout(() => {
        if (this.response === response) finish();
      }, this.latencies.llmFirstTokenMs);
      return;
    }
    this.itemAudioMs.set(itemId, 0);
    send(this.ws, {
      type: 'response.output_item.added',
      event_id: this.eventId(),
      response_id: id,
      output_index: 0,
      item: { id: itemId, type: 'message', role: 'assistant', content: [] },
    });
    stream.play(
      speechDurationMs(text),
      (audio, _startMs, endMs) => {
        record.audioSentMs = endMs;
        this.itemAudioMs.set(itemId, endMs);
        send(this.ws, {
          type: beta ? 'response.audio.delta' : 'response.output_audio.delta',
          event_id: this.eventId(),
          response_id: id,
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          delta: audio.toString('base64'),
        });
      },
      () => {
        send(this.ws, {
          type: beta ? 'response.audio.done' : 'response.output_audio.done',
          event_id: this.eventId(),
          response_id: id,
          item_id: itemId,
          output_index: 0,
          content_index: 0,
        });
        send(this.ws, {
          type: beta ? 'response.audio_transcript.done' : 'response.output_audio_transcript.done',
          event_id: this.eventId(),
          response_id: id,
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          transcript: text,
        });
        finish();
      },
    );
  }

  /** One function_call output item per call, its arguments streamed in fragments. */
  private sendFunctionCalls(
    responseId: string,
    calls: Array<{ name: string; argumentsJson: string }>,
    firstIndex: number,
  ): void {
    calls.forEach((call, position) => {
      const outputIndex = firstIndex + position;
      const itemId = `item_fc_${this.record.id}_${this.nextItem++}`;
      const callId = `call_emu${this.record.id}_${this.nextItem}`;
      this.knownCalls.set(callId, call.name);
      this.record.toolCalls.push({ callId, name: call.name, arguments: call.argumentsJson });
      const item = { id: itemId, object: 'realtime.item', type: 'function_call', call_id: callId, name: call.name };
      send(this.ws, {
        type: 'response.output_item.added',
        event_id: this.eventId(),
        response_id: responseId,
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      for (const delta of fragments(call.argumentsJson))
        send(this.ws, {
          type: 'response.function_call_arguments.delta',
          event_id: this.eventId(),
          response_id: responseId,
          item_id: itemId,
          output_index: outputIndex,
          call_id: callId,
          delta,
        });
      send(this.ws, {
        type: 'response.function_call_arguments.done',
        event_id: this.eventId(),
        response_id: responseId,
        item_id: itemId,
        output_index: outputIndex,
        call_id: callId,
        name: call.name,
        arguments: call.argumentsJson,
      });
      send(this.ws, {
        type: 'response.output_item.done',
        event_id: this.eventId(),
        response_id: responseId,
        output_index: outputIndex,
        item: { ...item, status: 'completed', arguments: call.argumentsJson },
      });
    });
  }

  private endResponse(status: 'completed' | 'cancelled' | undefined): void {
    const response = this.response;
    if (!response) return;
    this.response = undefined;
    response.stream.stop();
    if (status === undefined) return;
    response.record.status = status;
    // No usage rather than `usage: null`: the field is optional but never null.
    send(this.ws, {
      type: 'response.done',
      event_id: this.eventId(),
      response: { id: response.id, object: 'realtime.response', status, output: [] },
    });
  }

  private eventId(): string {
    this.eventIdCounter += 1;
    return `event_${this.record.id}_${this.eventIdCounter}`;
  }
}

/** Why `session.tools` would be refused, in the API's words, or undefined. */
function toolsProblem(tools: unknown): string | undefined {
  if (tools === undefined) return undefined;
  if (!Array.isArray(tools)) return "Invalid type for 'session.tools': expected an array.";
  for (const [index, tool] of (tools as Array<Record<string, unknown>>).entries()) {
    if (tool?.type !== 'function') return `Invalid value for 'session.tools[${index}].type': expected 'function'.`;
    if (typeof tool.name !== 'string' || tool.name === '')
      return `Missing required parameter: 'session.tools[${index}].name'.`;
  }
  return undefined;
}

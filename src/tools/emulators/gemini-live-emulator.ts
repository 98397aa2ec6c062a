import type { IncomingMessage } from 'node:http';
import { type Clock, type ClockTimer, REAL_CLOCK } from '../../shared/clock.js';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket } from 'ws';
import {
  EmulatorSessions,
  ToneStream,
  frameText,
  pushBounded,
  speechDurationMs,
  writeHttpError,
} from './emulator-kit.js';
import type { EmulatedReply, EmulatedToolResult } from './llm-emulator-base.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from './types.js';

/**
 * Gemini Live, emulated (docs/providers.md section 8): the BidiGenerateContent websocket with the key
 * in the query. The first message must be `setup` (anything else closes with 1007), answered by
 * `setupComplete`. Caller audio (`realtimeInput.audio`, PCM16 at the rate its mimeType names) is
 * judged by energy: 100 ms of speech while the model talks interrupts it (`interrupted`, then
 * `turnComplete`), 500 ms of silence after speech ends the caller's turn (its transcription) and
 * starts a model turn; `clientContent` with `turnComplete` starts one too. A model turn is a
 * 24 kHz PCM tone, 60 ms per character of the reply, with its output transcription, then
 * `generationComplete`, and `turnComplete` once the audio has had time to play (until then the
 * turn can still be interrupted). Every other server message goes out as a binary frame,
 * as Gemini sometimes does.
 *
 * Function calling: a reply with tool calls sends `toolCall {functionCalls: [{id, name, args}]}`
 * (after speaking its text, if any) and waits for the client's `toolResponse`, which must answer
 * every id (an unknown id closes with 1007); then the next turn speaks `afterToolResults`. Speech
 * from the caller while calls are pending sends `toolCallCancellation {ids}`, as Gemini does;
 * responses to cancelled ids are recorded and otherwise ignored.
 */

export interface GeminiLiveEmulatorOptions {
  latencies?: Partial<EmulatorLatencies>;
  /** The one key accepted; by default any non-empty key is. */
  apiKey?: string;
  replies?: EmulatedReply[];
  /** The reply once a toolResponse has answered every pending call (default: the next of `replies`). */
  afterToolResults?: EmulatedReply | ((results: EmulatedToolResult[]) => EmulatedReply);
  transcripts?: string[];
  /** RMS (int16) above which 20 ms of caller audio counts as speech. Default 300. */
  speechRmsThreshold?: number;
  /**
   * The caller's clock (shared/clock.ts), for the one wait that is about the caller's playback:
   * turnComplete held until the audio has had time to play. Generation stays on wall time (the
   * latencies), as a vendor's servers do. Wall time by default.
   */
  clock?: Clock;
}

export interface RecordedLiveConnection {
  id: number;
  setup: Record<string, unknown> | undefined;
  /** Client messages other than audio, parsed. */
  messages: Array<Record<string, unknown>>;
  audioMimeTypes: string[];
  audioBytes: number;
  /** realtimeInput.audio messages received. */
  audioMessages: number;
  modelTurns: Array<{ text: string; status: 'speaking' | 'complete' | 'interrupted' }>;
  interruptions: number;
  /** Function calls sent in toolCall messages, in order. */
  toolCalls: Array<{ id: string; name: string; args: unknown }>;
  /** functionResponses received, in order; `cancelled` when the call had been cancelled. */
  toolResponses: Array<{ id: string; name: string; response: unknown; cancelled: boolean }>;
  toolCallCancellations: string[][];
  closeCode?: number;
}

const OUTPUT_RATE_HZ = 24_000;
const SPEECH_START_MS = 100;
const SILENCE_END_MS = 500;

export class GeminiLiveEmulator implements VendorEmulator {
  readonly vendor = 'gemini_live';
  readonly connections: RecordedLiveConnection[] = [];
  private readonly latencies: EmulatorLatencies;
  private readonly sessions = new EmulatorSessions<LiveConnection>();
  private nextId = 1;

  constructor(private readonly options: GeminiLiveEmulatorOptions = {}) {
    this.latencies = { ...DEFAULT_EMULATOR_LATENCIES, ...options.latencies };
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
    const url = new URL(req.url ?? '/', 'http://emulator');
    if (!url.pathname.endsWith('.BidiGenerateContent')) return false;
    const key = url.searchParams.get('key');
    if (!key || (this.options.apiKey !== undefined && key !== this.options.apiKey)) {
      writeHttpError(socket, 401, {
        error: { code: 401, message: 'API key not valid. Please pass a valid API key.', status: 'UNAUTHENTICATED' },
      });
      return true;
    }
    const record: RecordedLiveConnection = {
      id: this.nextId++,
      setup: undefined,
      messages: [],
      audioMimeTypes: [],
      audioBytes: 0,
      audioMessages: 0,
      modelTurns: [],
      interruptions: 0,
      toolCalls: [],
      toolResponses: [],
      toolCallCancellations: [],
    };
    pushBounded(this.connections, record, 200);
    this.sessions.accept(
      req,
      socket,
      head,
      record,
      (ws) => new LiveConnection(ws, record, this.latencies, this.options),
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

class LiveConnection {
  private turn:
    | { stream: ToneStream; record: RecordedLiveConnection['modelTurns'][number]; timer?: ClockTimer }
    | undefined;
  private voicedMs = 0;
  private silentMs = 0;
  private inSpeech = false;
  private replyIndex = 0;
  private transcriptIndex = 0;
  private binaryNext = false;
  private readonly thresholdSquared: number;
  /** Calls sent and not yet answered, by id. */
  private readonly pendingCalls = new Map<string, string>();
  private readonly cancelledCalls = new Set<string>();
  private readonly answered: EmulatedToolResult[] = [];
  private callCounter = 0;
  private readonly clock: Clock;

  constructor(
    private readonly ws: WebSocket,
    private readonly record: RecordedLiveConnection,
    private readonly latencies: EmulatorLatencies,
    private readonly options: GeminiLiveEmulatorOptions,
  ) {
    this.thresholdSquared = (options.speechRmsThreshold ?? 300) ** 2;
    this.clock = options.clock ?? REAL_CLOCK;
    ws.on('message', (data: RawData) => this.onMessage(data));
  }

  stop(): void {
    this.turn?.stream.stop();
    this.clock.clearTimeout(this.turn?.timer);
    this.turn = undefined;
  }

  private onMessage(data: RawData): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(frameText(data)) as Record<string, unknown>;
    } catch {
      this.ws.close(1007, 'Request contains an invalid argument.');
      return;
    }
    if (!this.record.setup) {
      if (!message.setup || typeof message.setup !== 'object') {
        this.ws.close(1007, 'The first message must be setup.');
        return;
      }
      this.record.setup = message.setup as Record<string, unknown>;
      this.send({ setupComplete: {} });
      return;
    }
    const input = message.realtimeInput as { audio?: { mimeType?: string; data?: string } } | undefined;
    if (input?.audio) {
      const mimeType = String(input.audio.mimeType ?? '');
      if (!this.record.audioMimeTypes.includes(mimeType)) this.record.audioMimeTypes.push(mimeType);
      const pcm = Buffer.from(String(input.audio.data ?? ''), 'base64');
      this.record.audioBytes += pcm.length;
      this.record.audioMessages += 1;
      const rate = Number(/rate=(\d+)/.exec(mimeType)?.[1] ?? 16_000);
      this.onAudio(pcm, rate);
      return;
    }
    this.record.messages.push(message);
    if (message.toolResponse) {
      this.onToolResponse(message.toolResponse);
      return;
    }
    const content = message.clientContent as { turnComplete?: boolean } | undefined;
    if (content?.turnComplete) this.startTurn();
  }

  private onToolResponse(toolResponse: unknown): void {
    const responses = (toolResponse as { functionResponses?: unknown }).functionResponses;
    if (!Array.isArray(responses) || responses.length === 0) {
      this.ws.close(1007, 'Request contains an invalid argument. toolResponse needs functionResponses.');
      return;
    }
    for (const raw of responses as Array<Record<string, unknown>>) {
      const id = typeof raw.id === 'string' ? raw.id : '';
      const name = typeof raw.name === 'string' ? raw.name : '';
      const cancelled = this.cancelledCalls.has(id);
      if (!cancelled && !this.pendingCalls.has(id)) {
        this.ws.close(1007, `Request contains an invalid argument. Unknown function call id "${id}".`);
        return;
      }
      this.record.toolResponses.push({ id, name, response: raw.response, cancelled });
      if (cancelled) continue;
      this.pendingCalls.delete(id);
      this.answered.push({ name: name || undefined, callId: id, content: JSON.stringify(raw.response ?? {}) });
    }
    if (this.pendingCalls.size > 0 || this.answered.length === 0) return;
    const results = this.answered.splice(0);
    const after = this.options.afterToolResults;
    this.startTurn(after === undefined ? undefined : typeof after === 'function' ? after(results) : after);
  }

  private sendToolCall(calls: Array<{ name: string; argumentsJson: string }>): void {
    const functionCalls = calls.map((call) => {
      this.callCounter += 1;
      const id = `function-call-${this.record.id}-${this.callCounter}`;
      const args = JSON.parse(call.argumentsJson) as unknown;
      this.pendingCalls.set(id, call.name);
      this.record.toolCalls.push({ id, name: call.name, args });
      return { id, name: call.name, args };
    });
    this.send({ toolCall: { functionCalls } });
  }

  private onAudio(pcm: Buffer, rateHz: number): void {
    const samples = Math.floor(pcm.length / 2);
    if (samples === 0) return;
    let sum = 0;
    for (let i = 0; i < samples; i++) {
      const s = pcm.readInt16LE(i * 2);
      sum += s * s;
    }
    const ms = (samples * 1000) / rateHz;
    if (sum / samples >= this.thresholdSquared) {
      this.voicedMs += ms;
      this.silentMs = 0;
      if (!this.inSpeech && this.voicedMs >= SPEECH_START_MS) {
        this.inSpeech = true;
        if (this.pendingCalls.size > 0) {
          const ids = [...this.pendingCalls.keys()];
          for (const id of ids) this.cancelledCalls.add(id);
          this.pendingCalls.clear();
          this.answered.length = 0;
          this.record.toolCallCancellations.push(ids);
          this.send({ toolCallCancellation: { ids } });
        }
        if (this.turn) {
          this.turn.record.status = 'interrupted';
          this.stop();
          this.record.interruptions += 1;
          this.send({ serverContent: { interrupted: true } });
          this.send({ serverContent: { turnComplete: true } });
        }
      }
      return;
    }
    this.voicedMs = 0;
    if (!this.inSpeech) return;
    this.silentMs += ms;
    if (this.silentMs < SILENCE_END_MS) return;
    this.inSpeech = false;
    const transcripts = this.options.transcripts ?? ['hello'];
    this.send({
      serverContent: {
        inputTranscription: { text: transcripts[this.transcriptIndex++ % transcripts.length], finished: true },
      },
    });
    this.startTurn();
  }

  private startTurn(scripted?: EmulatedReply): void {
    if (this.turn) return;
    const replies = this.options.replies ?? ['Hello, how can I help you today?'];
    const reply = scripted ?? replies[this.replyIndex++ % replies.length]!;
    const text = typeof reply === 'string' ? reply : (reply.text ?? '');
    const toolCalls = typeof reply === 'string' ? [] : (reply.toolCalls ?? []);
    if (text === '') {
      if (toolCalls.length > 0) setTimeout(() => this.sendToolCall(toolCalls), this.latencies.llmFirstTokenMs);
      return;
    }
    const record = { text, status: 'speaking' as const } as RecordedLiveConnection['modelTurns'][number];
    this.record.modelTurns.push(record);
    const stream = new ToneStream(
      { encoding: 's16le', sampleRateHz: OUTPUT_RATE_HZ },
      {
        chunkMs: 100,
        realTimeFactor: this.latencies.ttsRealTimeFactor,
        firstByteMs: this.latencies.llmFirstTokenMs + this.latencies.ttsFirstByteMs,
      },
    );
    this.turn = { stream, record };
    let transcribed = false;
    let firstAudioAtMs: number | undefined;
    stream.play(
      speechDurationMs(text),
      (audio) => {
        firstAudioAtMs ??= this.clock.now();
        this.send({
          serverContent: {
            modelTurn: {
              parts: [{ inlineData: { mimeType: `audio/pcm;rate=${OUTPUT_RATE_HZ}`, data: audio.toString('base64') } }],
            },
          },
        });
        if (!transcribed) {
          transcribed = true;
          this.send({ serverContent: { outputTranscription: { text } } });
        }
      },
      () => {
        this.send({ serverContent: { generationComplete: true } });
        if (toolCalls.length > 0) this.sendToolCall(toolCalls);
        // Like Gemini, hold turnComplete until the audio has had time to play: until then the
        // caller can still interrupt the turn.
        const playedForMs = this.clock.now() - (firstAudioAtMs ?? this.clock.now());
        const turn = this.turn;
        if (turn) {
          turn.timer = this.clock.setTimeout(
            () => {
              if (this.turn !== turn) return;
              record.status = 'complete';
              this.turn = undefined;
              this.send({ serverContent: { turnComplete: true }, usageMetadata: { totalTokenCount: text.length } });
            },
            Math.max(0, speechDurationMs(text) - playedForMs),
          );
        }
      },
    );
  }

  private send(message: object): void {
    if (this.ws.readyState !== this.ws.OPEN) return;
    const json = JSON.stringify(message);
    this.binaryNext = !this.binaryNext;
    this.ws.send(this.binaryNext ? Buffer.from(json) : json, { binary: this.binaryNext });
  }
}

import { z } from 'zod';
import { AnthropicEmulator } from '../tools/emulators/anthropic-emulator.js';
import { CartesiaEmulator } from '../tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../tools/emulators/deepgram-emulator.js';
import { ElevenLabsEmulator } from '../tools/emulators/elevenlabs-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../tools/emulators/emulator-server.js';
import { GeminiEmulator } from '../tools/emulators/gemini-emulator.js';
import { OpenAiEmulator } from '../tools/emulators/openai-emulator.js';
import { GeminiLiveEmulator } from '../tools/emulators/gemini-live-emulator.js';
import { OpenAiRealtimeEmulator } from '../tools/emulators/openai-realtime-emulator.js';
import { OpenAiTtsEmulator } from '../tools/emulators/openai-tts-emulator.js';
import type { EmulatedReply, EmulatedToolResult } from '../tools/emulators/llm-emulator-base.js';
import { DEFAULT_EMULATOR_LATENCIES, type EmulatorLatencies, type VendorEmulator } from '../tools/emulators/types.js';
import { USAGE_EXIT, UsageError, listenFailure, parseCommandLine, usageLine } from './usage.js';

const HELP = `usage: switchboard emulate [options]

Serves stand-ins for the vendors' APIs on one port, each speaking its vendor's wire protocol:
Deepgram (live STT on /v1/listen, Aura TTS on /v1/speak, websocket and REST), OpenAI-compatible chat completions
(openai, groq, together, grok, ollama, custom_llm), OpenAI speech and Realtime, Anthropic
Messages, Gemini and Gemini Live, Cartesia and ElevenLabs. Point SWITCHBOARD_<VENDOR>_URL at it (printed at start) and calls,
load tests and benchmarks run offline, measuring Switchboard rather than the vendors.

The emulated STT decides speech by audio energy and answers each utterance with the next of the
--transcript lines; the LLMs answer with the --reply lines in turn, or "You said: <words>"; the
TTS voices speak a tone whose length follows the text.

options:
  --port <n>                    listen port (default 9090; 0 picks a free one)
  --host <addr>                 listen address (default 127.0.0.1)
  --stt-final-delay-ms <n>      end of speech to the final transcript (default ${DEFAULT_EMULATOR_LATENCIES.sttFinalDelayMs})
  --llm-first-token-ms <n>      request to first token (default ${DEFAULT_EMULATOR_LATENCIES.llmFirstTokenMs})
  --llm-tokens-per-sec <n>      token rate after the first (default ${DEFAULT_EMULATOR_LATENCIES.llmTokensPerSec})
  --tts-first-byte-ms <n>       text to first audio byte (default ${DEFAULT_EMULATOR_LATENCIES.ttsFirstByteMs})
  --tts-real-time-factor <n>    audio seconds made per second (default ${DEFAULT_EMULATOR_LATENCIES.ttsRealTimeFactor})
  --transcript <text>           what the STT "hears"; repeatable, used in turn (default: a few phrases)
  --reply <text>                what the LLMs answer; repeatable, used in turn
  --reply-json <json>           a reply with function calls, taken in turn with the --reply lines:
                                {"text": "...", "tool_calls": [{"name": "f", "arguments": {...}}]}
                                (several calls are parallel calls)
  --after-tool-results <text>   the answer to a request that ends with function results (the
                                model's pass after its calls), instead of the next reply;
                                {results} in it becomes the results' JSON
  --api-key <key>               accept only this key (default: any non-empty key, or none for ollama)
  -h, --help                    show this text
`;

const DEFAULT_TRANSCRIPTS = [
  'hello, I would like to book a table',
  'for two people tonight',
  'yes please',
  'thank you, goodbye',
];

/** Vendors whose endpoint variable the emulator answers for. */
const ENDPOINT_VARIABLES = [
  'DEEPGRAM',
  'OPENAI',
  'GROQ',
  'TOGETHER',
  'GROK',
  'OLLAMA',
  'CUSTOM_LLM',
  'ANTHROPIC',
  'GEMINI',
  'CARTESIA',
  'ELEVENLABS',
];

export interface EmulateIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

export interface EmulateOptions {
  port: number;
  host: string;
  latencies: EmulatorLatencies;
  transcripts: string[];
  replies: EmulatedReply[];
  /** The answer once function results come back; `{results}` is replaced by them. */
  afterToolResults?: string;
  apiKey: string | undefined;
}

/** Parses the flags; throws a UsageError with a message for the user on bad input. */
export function parseEmulateArgs(argv: string[]): EmulateOptions | 'help' {
  const { values, tokens } = parseCommandLine({
    args: argv,
    strict: true,
    tokens: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'stt-final-delay-ms': { type: 'string' },
      'llm-first-token-ms': { type: 'string' },
      'llm-tokens-per-sec': { type: 'string' },
      'tts-first-byte-ms': { type: 'string' },
      'tts-real-time-factor': { type: 'string' },
      transcript: { type: 'string', multiple: true },
      reply: { type: 'string', multiple: true },
      'reply-json': { type: 'string', multiple: true },
      'after-tool-results': { type: 'string' },
      'api-key': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const number = (name: keyof typeof values, fallback: number, min: number, max: number): number => {
    const raw = values[name];
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (typeof raw !== 'string' || raw.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
      throw new UsageError(`--${name} must be a number from ${min} to ${max}`);
    }
    return value;
  };
  const defaults = DEFAULT_EMULATOR_LATENCIES;
  return {
    port: number('port', 9090, 0, 65_535),
    host: values.host ?? '127.0.0.1',
    latencies: {
      sttFinalDelayMs: number('stt-final-delay-ms', defaults.sttFinalDelayMs, 0, 60_000),
      llmFirstTokenMs: number('llm-first-token-ms', defaults.llmFirstTokenMs, 0, 60_000),
      llmTokensPerSec: number('llm-tokens-per-sec', defaults.llmTokensPerSec, 0.1, 100_000),
      ttsFirstByteMs: number('tts-first-byte-ms', defaults.ttsFirstByteMs, 0, 60_000),
      ttsRealTimeFactor: number('tts-real-time-factor', defaults.ttsRealTimeFactor, 0.1, 1000),
    },
    transcripts: values.transcript && values.transcript.length > 0 ? values.transcript : DEFAULT_TRANSCRIPTS,
    // --reply and --reply-json are one script, in the order given.
    replies: tokens.flatMap((token) => {
      if (token.kind !== 'option' || token.value === undefined) return [];
      if (token.name === 'reply') return [token.value];
      if (token.name === 'reply-json') return [scriptedReply(token.value)];
      return [];
    }),
    afterToolResults: values['after-tool-results'],
    apiKey: values['api-key'],
  };
}

const scriptedReplyJson = z
  .object({
    text: z.string().optional(),
    tool_calls: z
      .array(z.object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()).default({}) }).strict())
      .default([]),
  })
  .strict();

/** A --reply-json value as the emulators' reply; a UsageError says what is wrong with it. */
function scriptedReply(raw: string): EmulatedReply {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new UsageError(`--reply-json must be JSON, got ${JSON.stringify(raw.slice(0, 60))}`);
  }
  const parsed = scriptedReplyJson.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`--reply-json ${issue.path.join('.') || 'value'}: ${issue.message}`);
  }
  if (!parsed.data.text && parsed.data.tool_calls.length === 0)
    throw new UsageError('--reply-json needs "text" or "tool_calls"');
  return {
    text: parsed.data.text,
    toolCalls: parsed.data.tool_calls.map((call) => ({
      name: call.name,
      argumentsJson: JSON.stringify(call.arguments),
    })),
  };
}

/** The --after-tool-results answer, with the results' JSON where it says `{results}`. */
function afterResults(template: string): (results: EmulatedToolResult[]) => EmulatedReply {
  return (results) => template.replaceAll('{results}', results.map((result) => result.content).join(' '));
}

/** Every vendor emulator, configured alike; the providers' tests build the same classes. */
export function createEmulators(options: Omit<EmulateOptions, 'port' | 'host'>): VendorEmulator[] {
  const { latencies, apiKey } = options;
  const replies = options.replies.length > 0 ? options.replies : undefined;
  const afterToolResults = options.afterToolResults === undefined ? undefined : afterResults(options.afterToolResults);
  return [
    new DeepgramEmulator({ latencies, apiKey, transcripts: options.transcripts }),
    // Without a key to check, bearer-less requests (Ollama, a local server) are served too.
    new OpenAiEmulator({ latencies, apiKey, replies, afterToolResults, requireKey: apiKey !== undefined }),
    new OpenAiTtsEmulator({ latencies, apiKey }),
    new AnthropicEmulator({ latencies, apiKey, replies, afterToolResults }),
    new GeminiEmulator({ latencies, apiKey, replies, afterToolResults }),
    new CartesiaEmulator({ latencies, apiKey }),
    new ElevenLabsEmulator({ latencies, apiKey }),
    new OpenAiRealtimeEmulator({ latencies, apiKey, replies, afterToolResults, transcripts: options.transcripts }),
    new GeminiLiveEmulator({ latencies, apiKey, replies, afterToolResults, transcripts: options.transcripts }),
  ];
}

export async function startEmulate(options: EmulateOptions): Promise<RunningEmulators> {
  return startEmulatorServer(createEmulators(options), { port: options.port, host: options.host });
}

/** `switchboard emulate`: runs until SIGINT/SIGTERM. */
export async function runEmulate(argv: string[], io: EmulateIo = process): Promise<number> {
  let options: EmulateOptions | 'help';
  try {
    options = parseEmulateArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr.write(usageLine('emulate', err.message));
    return USAGE_EXIT;
  }
  if (options === 'help') {
    io.stdout.write(HELP);
    return 0;
  }
  let running: RunningEmulators;
  try {
    running = await startEmulate(options);
  } catch (err) {
    const why =
      listenFailure(err, options.host, options.port) ??
      `cannot listen on ${options.host}:${options.port}: ${err instanceof Error ? err.message : String(err)}`;
    io.stderr.write(`switchboard emulate: ${why}\n`);
    return 1;
  }
  const l = options.latencies;
  io.stdout.write(
    `vendor emulators listening on ${running.url}\n` +
      `latencies: STT final ${l.sttFinalDelayMs} ms, LLM first token ${l.llmFirstTokenMs} ms at ${l.llmTokensPerSec} tokens/s, ` +
      `TTS first byte ${l.ttsFirstByteMs} ms at ${l.ttsRealTimeFactor}x real time\n\n` +
      `point the server at them:\n${ENDPOINT_VARIABLES.map((v) => `  export SWITCHBOARD_${v}_URL=${running.url}`).join('\n')}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await running.close();
  io.stdout.write('vendor emulators stopped\n');
  return 0;
}

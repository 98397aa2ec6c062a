import { fileURLToPath } from 'node:url';
import { type TestContext, describe, it } from 'vitest';
import { AnthropicEmulator } from '../../src/tools/emulators/anthropic-emulator.js';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { ElevenLabsEmulator } from '../../src/tools/emulators/elevenlabs-emulator.js';
import { type RunningEmulators, startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { GeminiEmulator, type GeminiEmulatorOptions } from '../../src/tools/emulators/gemini-emulator.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { OpenAiTtsEmulator } from '../../src/tools/emulators/openai-tts-emulator.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import type { CallReport } from '../../src/tools/simulator/call-report.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { startToolReceiver } from '../fakes/tool-webhook-receiver.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * Phone calls through the real vendor adapters, each talking its vendor's wire protocol to the
 * emulators on one port, which the server finds through SWITCHBOARD_<VENDOR>_URL: the path an
 * operator takes to load-test offline, and proof that each adapter works inside a call.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const FAST = {
  sttFinalDelayMs: 50,
  llmFirstTokenMs: 50,
  llmTokensPerSec: 200,
  ttsFirstByteMs: 30,
  ttsRealTimeFactor: 10,
};
// Short lines: the caller hears each in real time, and their length is not the subject.
const GREETING = 'Hello, harbour hotel.';
const ANSWER = 'A room is free.';
const TRANSCRIPTS = ['do you have a room', 'for tonight', 'for two people'];

interface Vendors {
  deepgram: DeepgramEmulator;
  openai: OpenAiEmulator;
  anthropic: AnthropicEmulator;
  gemini: GeminiEmulator;
  cartesia: CartesiaEmulator;
  elevenlabs: ElevenLabsEmulator;
  openaiTts: OpenAiTtsEmulator;
}

/** The emulators on one port and a server pointed at them, both closed when the test finishes. */
async function startVendors(
  onTestFinished: TestContext['onTestFinished'],
  gemini: GeminiEmulatorOptions = {},
): Promise<{ vendors: Vendors; server: CallServer }> {
  const replies = [GREETING, ANSWER];
  const vendors: Vendors = {
    // One transcript per utterance the emulator detects; the clip's 300 ms pause may make two.
    deepgram: new DeepgramEmulator({ latencies: FAST, transcripts: TRANSCRIPTS }),
    openai: new OpenAiEmulator({ latencies: FAST, replies }),
    anthropic: new AnthropicEmulator({ latencies: FAST, replies }),
    gemini: new GeminiEmulator({ latencies: FAST, replies, ...gemini }),
    cartesia: new CartesiaEmulator({ latencies: FAST }),
    elevenlabs: new ElevenLabsEmulator({ latencies: FAST }),
    openaiTts: new OpenAiTtsEmulator({ latencies: FAST }),
  };
  const emulators: RunningEmulators = await startEmulatorServer(Object.values(vendors));
  onTestFinished(() => emulators.close());
  const url = emulators.url;
  const server = await startCallServer(() => undefined, {
    SWITCHBOARD_DEEPGRAM_URL: url,
    SWITCHBOARD_OPENAI_URL: url,
    SWITCHBOARD_ANTHROPIC_URL: url,
    SWITCHBOARD_GEMINI_URL: url,
    SWITCHBOARD_CARTESIA_URL: url,
    SWITCHBOARD_ELEVENLABS_URL: url,
  });
  onTestFinished(() => server.close());
  return { vendors, server };
}

async function callWithGreetingAndOneTurn(
  server: CallServer,
  services: { llm: string; tts: string },
  more: { llmOptions?: Array<{ name: string; value: unknown }>; webhookTools?: Record<string, unknown> } = {},
): Promise<CallReport> {
  const { wssUrl } = await server.createConfig({
    services: { stt: 'deepgram', ...services },
    config: [
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You are the front desk of a hotel.' }] },
          { name: 'run_on_config', value: true },
          ...(more.llmOptions ?? []),
        ],
      },
    ],
    ...(more.webhookTools ? { webhook_tools: more.webhookTools } : {}),
    api_keys: {
      deepgram: 'dg-key',
      openai: 'sk-key',
      anthropic: 'ant-key',
      gemini: 'gem-key',
      cartesia: 'car-key',
      elevenlabs: 'el-key',
    },
  });
  return runPhoneCall({
    target: { wssUrl },
    clips: { birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) } },
    scenario: {
      steps: [
        { do: 'wait-bot-silence', ms: 600 },
        { do: 'play', clip: 'birch' },
        { do: 'wait-bot-silence', ms: 600 },
      ],
    },
  });
}

function expectGreetingAndReply(expect: TestContext['expect'], report: CallReport): void {
  expect(report.outcome).toBe('completed');
  expect(report.metrics.violations.total).toBe(0);
  expect(report.metrics.firstBotAudioMs).not.toBeNull();
  expect(report.metrics.bot.segments).toBe(2);
  expect(report.metrics.utterances[0]!.replyLatencyMs).not.toBeNull();
}

// Each call has its own emulators and server and checks no timing: they run at once.
describe.concurrent('a phone call through the vendor adapters and their emulators', () => {
  it('deepgram + openai + cartesia: greeting, the transcript reaches the model, the answer is spoken', async ({
    expect,
    onTestFinished,
  }) => {
    const { vendors, server } = await startVendors(onTestFinished);
    const report = await callWithGreetingAndOneTurn(server, { llm: 'openai', tts: 'cartesia' });
    expectGreetingAndReply(expect, report);

    // Deepgram heard mu-law 8 kHz, and its socket opened with the call, before anyone spoke.
    const listen = vendors.deepgram.log.find((c) => c.path === 'listen')!;
    expect(listen.query).toMatchObject({
      encoding: 'mulaw',
      sample_rate: '8000',
      interim_results: 'true',
      vad_events: 'true',
    });
    // The second request carries the caller's whole turn (every final of it, in order) after the greeting.
    const second = vendors.openai.requests[1]!.body as { messages: Array<{ role: string; content: string }> };
    expect(second.messages.at(-2)).toEqual({ role: 'assistant', content: GREETING });
    const heard = second.messages.at(-1)!;
    expect(heard.role).toBe('user');
    const wholeTurns = TRANSCRIPTS.map((_, i) => TRANSCRIPTS.slice(0, i + 1).join(' '));
    expect(wholeTurns).toContain(heard.content);
    // Cartesia spoke both replies as mu-law 8 kHz, each in its own context.
    expect(vendors.cartesia.contexts.length).toBeGreaterThanOrEqual(2);
    expect(vendors.cartesia.contexts.every((c) => c.requests[0]!.output_format.encoding === 'pcm_mulaw')).toBe(true);
    expect(vendors.cartesia.contexts.map((c) => c.transcripts.join('').trim())).toEqual([GREETING, ANSWER]);
    expect(vendors.openai.requests).toHaveLength(2);
  });

  it('deepgram + anthropic + elevenlabs', async ({ expect, onTestFinished }) => {
    const { vendors, server } = await startVendors(onTestFinished);
    expectGreetingAndReply(expect, await callWithGreetingAndOneTurn(server, { llm: 'anthropic', tts: 'elevenlabs' }));
    expect(vendors.anthropic.requests).toHaveLength(2);
    expect(vendors.elevenlabs.connections.length).toBeGreaterThanOrEqual(1);
  });

  it('deepgram + gemini + deepgram_tts (Aura), one Deepgram key for both', async ({ expect, onTestFinished }) => {
    const { vendors, server } = await startVendors(onTestFinished);
    expectGreetingAndReply(expect, await callWithGreetingAndOneTurn(server, { llm: 'gemini', tts: 'deepgram_tts' }));
    expect(vendors.gemini.requests).toHaveLength(2);
    const speak = vendors.deepgram.log.filter((c) => c.path === 'speak');
    expect(speak.flatMap((c) => c.texts).join(' ')).toContain('harbour hotel');
  });

  it('gemini 3 calls a function: its thought signature goes back with the call, so the second pass is accepted', async ({
    expect,
    onTestFinished,
  }) => {
    const receiver = await startToolReceiver({ check_room: { result: { free: true } } });
    try {
      const { vendors, server } = await startVendors(onTestFinished, {
        replies: [GREETING, { toolCalls: [{ name: 'check_room', argumentsJson: '{"people":2}' }] }],
        afterToolResults: ANSWER,
      });
      const report = await callWithGreetingAndOneTurn(
        server,
        { llm: 'gemini', tts: 'cartesia' },
        {
          llmOptions: [
            { name: 'model', value: 'gemini-3-flash-preview' },
            {
              name: 'tools',
              value: [{ type: 'function', function: { name: 'check_room', parameters: { type: 'object' } } }],
            },
          ],
          webhookTools: { check_room: { url: receiver.urlOf('check_room') } },
        },
      );
      expectGreetingAndReply(expect, report);
      expect(receiver.requests).toHaveLength(1);
      expect(vendors.gemini.requests.map((r) => r.status)).toEqual([200, 200, 200]);
      const last = vendors.gemini.requests[2]!.body as { contents: Array<{ parts: Array<Record<string, unknown>> }> };
      const call = last.contents.flatMap((c) => c.parts).find((p) => 'functionCall' in p)!;
      expect(call.thoughtSignature).toEqual(expect.any(String));
      expect(vendors.cartesia.contexts.map((c) => c.transcripts.join('').trim())).toEqual([GREETING, ANSWER]);
    } finally {
      await receiver.close();
    }
  });

  it('deepgram + openai + openai_tts, resampled from 24 kHz to the phone’s 8 kHz', async ({
    expect,
    onTestFinished,
  }) => {
    const { vendors, server } = await startVendors(onTestFinished);
    expectGreetingAndReply(expect, await callWithGreetingAndOneTurn(server, { llm: 'openai', tts: 'openai_tts' }));
    expect(vendors.openaiTts.requests.length).toBeGreaterThanOrEqual(2);
  });
});

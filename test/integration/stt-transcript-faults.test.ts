import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_TURN_TEXT_CHARS } from '../../src/pipeline/transcript-guard.js';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { vendorCalls } from '../helpers/vendor-call.js';

/**
 * A speech-to-text stream that is well formed but absurd: Results with is_final and speech_final
 * and a 100,000-character transcript every 150 ms, while the caller says two sentences. Words
 * without speech from the VAD are accepted on purpose (a quiet caller it missed), so the bound
 * is the caller's audio: no one says 100,000 characters in a few seconds. Those transcripts are
 * a provider fault: dropped, counted, logged once; the call goes on, and the LLM never gets them.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const LATENCIES = {
  sttFinalDelayMs: 150,
  llmFirstTokenMs: 30,
  llmTokensPerSec: 200,
  ttsFirstByteMs: 30,
  ttsRealTimeFactor: 10,
};
const GIANT = `${'x'.repeat(50_000)} ${'y'.repeat(49_999)}`;

const startCall = vendorCalls();
let flood: NodeJS.Timeout | undefined;

afterEach(() => clearInterval(flood));

function giantResults(): string {
  return JSON.stringify({
    type: 'Results',
    channel_index: [0, 1],
    start: 0,
    duration: 0.15,
    is_final: true,
    speech_final: true,
    from_finalize: false,
    channel: { alternatives: [{ transcript: GIANT, confidence: 0.99, words: [] }] },
    metadata: { request_id: 'r', model_uuid: 'm', model_info: { name: 'nova', version: '1', arch: 'nova' } },
  });
}

describe('an STT stream sending transcripts no caller could have said', () => {
  it('drops them as a provider fault (counted, logged once): no turn is made of them, the LLM never gets them', async () => {
    const deepgram = new DeepgramEmulator({ latencies: LATENCIES, transcripts: ['the birch canoe', 'go forward'] });
    const openai = new OpenAiEmulator({ latencies: LATENCIES, replies: ['Hello, how can I help?', 'Sure.'] });
    const cartesia = new CartesiaEmulator({ latencies: LATENCIES });
    const { server, wssUrl } = await startCall({
      deepgram,
      openai,
      cartesia,
      instructions: 'You are a boat rental desk.',
      captureLogs: true,
    });
    flood = setInterval(() => deepgram.sendRaw(giantResults(), 'listen'), 150);

    const report = await runPhoneCall({
      target: { wssUrl },
      clips: {
        birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
        forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
      },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-audio', timeoutMs: 10_000 },
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-audio', timeoutMs: 10_000 },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });
    clearInterval(flood);
    expect(report.outcome).toBe('completed');
    const summary = await server.waitForLog((r) => r.msg === 'call ended');

    // The greeting and one answer per sentence the caller said, each heard to its end: never one per flood message.
    expect(openai.requests.length).toBeGreaterThanOrEqual(1);
    expect(openai.requests.length).toBeLessThanOrEqual(3);
    for (const request of openai.requests) {
      const messages = (request.body as { messages: Array<{ role: string; content: string }> }).messages;
      for (const message of messages) expect(message.content.length).toBeLessThanOrEqual(MAX_TURN_TEXT_CHARS);
    }
    expect(summary.droppedTranscripts).toBeGreaterThan(10);
    const warnings = server.logs.filter((r) => String(r.msg).includes('longer than the caller could have said'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, provider: 'deepgram', chars: GIANT.length });
  }, 60_000);
});

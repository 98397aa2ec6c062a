import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ProviderSettings } from '../../src/providers/registry.js';
import type { ProviderContext, SttEvent } from '../../src/providers/types.js';
import { builtinRegistry } from '../../src/runtime.js';

/**
 * Each adapter against its real vendor. A vendor's tests run only when its key is in the
 * environment (e.g. `DEEPGRAM_API_KEY=… npx vitest run test/live`); CI has no keys and skips them.
 */

const registry = builtinRegistry();
const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
const env = process.env as Record<string, string | undefined>;
const LIVE_TIMEOUT_MS = 60_000;

function settings(keyVariable: string, options: Record<string, unknown> = {}): ProviderSettings {
  return { options, apiKey: env[keyVariable], serviceOptions: {}, env: env as ProviderSettings['env'] };
}

function context(): ProviderContext {
  return { signal: AbortSignal.timeout(LIVE_TIMEOUT_MS), log };
}

describe.runIf(env.DEEPGRAM_API_KEY)('deepgram (live)', () => {
  it(
    'transcribes the birch canoe sentence from 8 kHz mu-law',
    async () => {
      const stt = registry.createStt('deepgram', settings('DEEPGRAM_API_KEY'));
      const finals: string[] = [];
      const stream = await stt.open(context(), (event: SttEvent) => {
        if (event.type === 'final' && event.text) finals.push(event.text);
      });
      const audio = readFileSync(fileURLToPath(new URL('../../fixtures/audio/A06_birch_canoe.ulaw', import.meta.url)));
      for (let offset = 0; offset < audio.length; offset += 160) {
        stream.write(audio.subarray(offset, offset + 160));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      stream.finalize();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await stream.close();
      expect(finals.join(' ').toLowerCase()).toContain('canoe');
    },
    LIVE_TIMEOUT_MS,
  );
});

const LLMS: Array<[name: string, keyVariable: string]> = [
  ['openai', 'OPENAI_API_KEY'],
  ['groq', 'GROQ_API_KEY'],
  ['together', 'TOGETHER_API_KEY'],
  ['grok', 'GROK_API_KEY'],
  ['anthropic', 'ANTHROPIC_API_KEY'],
  ['gemini', 'GEMINI_API_KEY'],
];

for (const [name, keyVariable] of LLMS) {
  describe.runIf(env[keyVariable])(`${name} (live)`, () => {
    it(
      'streams an answer',
      async () => {
        const llm = registry.createLlm(name, settings(keyVariable));
        let text = '';
        const request = { messages: [{ role: 'user' as const, content: 'Reply with the single word: banana' }] };
        for await (const delta of llm.complete(request, context())) if (delta.type === 'text') text += delta.text;
        expect(text.toLowerCase()).toContain('banana');
      },
      LIVE_TIMEOUT_MS,
    );
  });
}

const VOICES: Array<[name: string, keyVariable: string]> = [
  ['cartesia', 'CARTESIA_API_KEY'],
  ['elevenlabs', 'ELEVENLABS_API_KEY'],
  ['deepgram_tts', 'DEEPGRAM_API_KEY'],
  ['openai_tts', 'OPENAI_API_KEY'],
];

for (const [name, keyVariable] of VOICES) {
  describe.runIf(env[keyVariable])(`${name} (live)`, () => {
    it(
      'speaks a sentence and says which text the audio covers',
      async () => {
        const tts = registry.createTts(name, settings(keyVariable));
        async function* text(): AsyncGenerator<string> {
          yield 'Hello there, thanks for calling.';
        }
        let audioBytes = 0;
        const spoken: string[] = [];
        for await (const out of tts.synthesize(text(), context())) {
          if (out.type === 'audio') audioBytes += out.audio.length;
          else spoken.push(out.text);
        }
        tts.close?.();
        // At least half a second of audio in the provider's own format.
        expect(audioBytes).toBeGreaterThan(
          (tts.outputFormat.sampleRateHz / 2) * (tts.outputFormat.encoding === 'mulaw' ? 1 : 2),
        );
        expect(spoken.join(' ')).toContain('thanks');
      },
      LIVE_TIMEOUT_MS,
    );
  });
}

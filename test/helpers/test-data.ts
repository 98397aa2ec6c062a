import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * What tests share about the service without loading it: the default account's key, data dirs,
 * a valid configuration body. test-app.ts and call-server.ts load the whole server, so a test that
 * starts `switchboard serve` as a process, in a fresh test process of its own, took about a second
 * of CPU to collect when it imported these from there (docs/testing.md).
 */

export const TEST_KEY = 'sb_test_default_account_key_0001';

export function tempDataDir(): string {
  return mkdtempSync(join(tmpdir(), 'switchboard-test-'));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export const auth = (key = TEST_KEY) => ({ authorization: `Bearer ${key}` });

/** A valid telephony configuration body, with overrides. */
export function sampleConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    bot_profile: 'telephony_ws_voice_2024_09',
    services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
    config: [
      { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.3 } }] },
      {
        service: 'llm',
        options: [
          { name: 'model', value: 'gpt-4o-mini' },
          {
            name: 'initial_messages',
            value: [{ role: 'system', content: [{ type: 'text', text: 'You are a helpful phone assistant.' }] }],
          },
          { name: 'run_on_config', value: true },
        ],
      },
      { service: 'tts', options: [{ name: 'voice', value: 'voice-1' }] },
    ],
    max_duration: 600,
    api_keys: {
      openai: 'sk-test-openai-0123456789',
      deepgram: 'dg-test-key-abcdefgh',
      cartesia: 'sk_car_test_0123456789',
    },
    ...overrides,
  };
}

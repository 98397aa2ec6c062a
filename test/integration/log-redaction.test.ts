import { get } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/env.js';
import { createLogger } from '../../src/observability/logger.js';
import { builtinRegistry, defaultRuntime } from '../../src/runtime.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { openDatabase } from '../../src/store/database.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { freePort } from '../helpers/free-port.js';
import { RoomClient } from '../helpers/room-client.js';
import { TEST_KEY, removeDir, sampleConfig, tempDataDir } from '../helpers/test-data.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Download links and room tokens are bearer credentials: whoever reads them can fetch a call's
 * audio or join a room. The request log must keep the path of such requests and drop the secret,
 * at every level.
 */

interface LoggedServer {
  baseUrl: string;
  /** Every line the server's logger wrote, at every level. */
  lines: string[];
  close(): Promise<void>;
}

/** A real listening server with scripted providers whose logger writes every level into `lines`. */
async function startLoggedServer(): Promise<LoggedServer> {
  const dataDir = tempDataDir();
  const port = await freePort();
  const config = loadConfig({
    SWITCHBOARD_DATA_DIR: dataDir,
    SWITCHBOARD_API_KEY: TEST_KEY,
    PORT: String(port),
    SWITCHBOARD_PUBLIC_URL: `http://127.0.0.1:${port}`,
  });
  const database = await openDatabase(dataDir);
  const registry = builtinRegistry()
    .registerStt('scripted_stt', () => new ScriptedStt([]))
    .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Welcome.', 'Hello again.'] }))
    .registerTts('tone_tts', () => new ToneTts());
  const lines: string[] = [];
  const logger = createLogger('trace', { write: (line: string) => void lines.push(line) });
  const app = await buildApp({ config, database, logger, runtime: defaultRuntime(registry) });
  const baseUrl = await app.listen({ port, host: '127.0.0.1' });
  return {
    baseUrl,
    lines,
    close: async () => {
      await app.close();
      await database.close();
      removeDir(dataDir);
    },
  };
}

let server: LoggedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const SERVICES = { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' };

function status(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

async function api<T>(path: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(`${server!.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
  });
  expect(res.status, path).toBe(200);
  return (await res.json()) as T;
}

describe('credentials in request URLs', () => {
  it('never reach the log, while the paths do', async () => {
    server = await startLoggedServer();
    const secrets: string[] = [];

    // A recorded call, and its download link (valid without an API key until it expires).
    const config = await api<{ id: string }>('/v1/bots/twilio-config', {
      method: 'POST',
      body: JSON.stringify(
        sampleConfig({
          services: SERVICES,
          config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
          recording_settings: { type: 'cloud' },
        }),
      ),
    });
    const wssUrl = `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${config.id}`;
    await runPhoneCall({ target: { wssUrl }, scenario: { steps: [{ do: 'wait-bot-silence', ms: 400 }] } });
    let recordingId: string | undefined;
    for (let i = 0; i < 200 && !recordingId; i++) {
      const list = await api<{ data: Array<{ id: string; status: string }> }>('/v1/recordings?limit=1');
      if (list.data[0]?.status === 'finished') recordingId = list.data[0].id;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(recordingId).toBeDefined();
    const link = await api<{ download_link: string; expires: number }>(`/v1/recordings/${recordingId}/access-link`);
    const linkUrl = new URL(link.download_link);
    const signature = linkUrl.searchParams.get('signature')!;
    secrets.push(signature);
    expect(await status(link.download_link)).toBe(200);
    // A forged link is refused, and its would-be signature is not logged either.
    const forged = 'forged-signature-0123456789';
    secrets.push(forged);
    linkUrl.searchParams.set('signature', forged);
    expect(await status(linkUrl.href)).toBe(403);

    // A room joined with ?token=, the fallback for clients that cannot set subprotocols.
    const room = await api<{ room_url: string; token: string }>('/v1/bots/start', {
      method: 'POST',
      body: JSON.stringify(sampleConfig({ bot_profile: 'voice_2024_10', services: SERVICES, max_duration: 60 })),
    });
    secrets.push(room.token);
    const roomName = room.room_url.split('/rooms/')[1]!;
    const client = await RoomClient.connect(
      `${server.baseUrl.replace(/^http/, 'ws')}/rooms/${roomName}/ws`,
      room.token,
      { viaQuery: true },
    );
    await client.until('bot-ready', () => client.of('bot-ready').length > 0);
    client.close();

    // Presigned-S3-style and other credential parameters, on a route that exists and one that does not.
    const amz = {
      'X-Amz-Signature': 'amz-signature-secret-1',
      'X-Amz-Credential': 'AKIAEXAMPLESECRET/20250101/us-east-1/s3/aws4_request',
      'X-Amz-Security-Token': 'amz-session-token-secret',
      access_token: 'oauth-access-token-secret',
      api_key: 'api-key-secret-value',
    };
    secrets.push(...Object.values(amz));
    const query = `${new URLSearchParams(amz)}&expires=1234567890`;
    expect(await status(`${server.baseUrl}/healthz?${query}`)).toBe(200);
    expect(await status(`${server.baseUrl}/no-such-route?${query}`)).toBe(404);

    const { lines } = server;
    await waitFor(
      () => (lines.some((l) => l.includes('/no-such-route')) ? true : undefined),
      5000,
      'the 404 request in the log',
    );
    for (const secret of secrets) {
      for (const form of new Set([
        secret,
        encodeURIComponent(secret),
        new URLSearchParams({ s: secret }).toString().slice(2),
      ])) {
        const leaking = lines.filter((line) => line.includes(form));
        expect(leaking, `${secret} is logged`).toEqual([]);
      }
    }
    // The paths are still there to read, and the non-secret expiry too.
    expect(lines.some((l) => l.includes(`/recording-downloads/${recordingId}/mixed.wav?`))).toBe(true);
    expect(lines.some((l) => l.includes(`/rooms/${roomName}/ws?token=`))).toBe(true);
    expect(lines.some((l) => l.includes('/healthz?') && l.includes('expires=1234567890'))).toBe(true);
  });
});

import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulatorServer } from '../../src/tools/emulators/emulator-server.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { type TestApp, createTestApp } from '../helpers/test-app.js';
import { auth, removeDir, sampleConfig } from '../helpers/test-data.js';

/**
 * service_options.<provider>.base_url is chosen by whoever writes the bot configuration, and the
 * provider's key is sent there: it may not reach metadata, loopback or private addresses unless
 * the operator allows private ones (self-hosted model servers).
 */

const TENANT_KEY = 'sk-tenant-secret-0123456789';
const GREETING = 'Hello, the private model server speaks.';

let app: TestApp | undefined;
let server: CallServer | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  await server?.close();
  server = undefined;
  if (app) {
    await app.close();
    removeDir(app.dataDir);
  }
  app = undefined;
});

async function save(target: TestApp, body: Record<string, unknown>, url = '/v1/bots/twilio-config') {
  const res = await target.app.inject({ method: 'POST', url, headers: auth(), payload: body });
  return { status: res.statusCode, body: res.json() as { error?: string; info?: string } };
}

/** An HTTP server that answers 200 to anything and records what reached it, Authorization included. */
async function startRecorder(): Promise<{
  port: number;
  requests: Array<{ method?: string; url?: string; authorization?: string }>;
}> {
  const requests: Array<{ method?: string; url?: string; authorization?: string }> = [];
  const http: Server = createServer((req, res) => {
    requests.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream' }).end('data: [DONE]\n\n');
  });
  http.on('upgrade', (req, socket) => {
    requests.push({ method: 'UPGRADE', url: req.url, authorization: req.headers.authorization });
    socket.destroy();
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => http.close(() => resolve())));
  return { port: (http.address() as AddressInfo).port, requests };
}

describe('service_options.<provider>.base_url address checks', () => {
  it('refuses metadata, loopback and private literal addresses when the configuration is saved, naming the field', async () => {
    app = await createTestApp();
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        { service_options: { openai: { base_url: 'http://169.254.169.254/latest/meta-data' } } },
        'services.llm: openai: service_options.openai.base_url points at 169.254.169.254, a link-local or metadata address',
      ],
      [
        { service_options: { openai: { base_url: 'http://127.0.0.1:8080/admin' } } },
        'services.llm: openai: service_options.openai.base_url points at 127.0.0.1, a loopback address (the operator can allow loopback and private addresses with SWITCHBOARD_PROVIDER_ALLOW_PRIVATE=true)',
      ],
      [
        { service_options: { cartesia: { base_url: 'http://[::1]:9000' } } },
        'services.tts: cartesia: service_options.cartesia.base_url points at ::1, a loopback address',
      ],
      [
        { service_options: { deepgram: { base_url: 'https://10.0.0.7' } } },
        'services.stt: deepgram: service_options.deepgram.base_url points at 10.0.0.7, a private address',
      ],
      [
        {
          services: { stt: 'deepgram', llm: 'custom_llm', tts: 'cartesia' },
          config: [{ service: 'llm', options: [{ name: 'model', value: 'llama' }] }],
          service_options: { custom_llm: { base_url: 'http://192.168.1.20:8000/v1' } },
        },
        'services.llm: custom_llm: service_options.custom_llm.base_url points at 192.168.1.20, a private address',
      ],
    ];
    for (const [overrides, message] of cases) {
      for (const url of ['/v1/bots/twilio-config', '/v1/bots/start']) {
        const body =
          url === '/v1/bots/start'
            ? { ...sampleConfig(overrides), bot_profile: 'voice_2024_10' }
            : sampleConfig(overrides);
        const res = await save(app, body, url);
        expect(res.status, `${url} ${JSON.stringify(overrides)}`).toBe(400);
        expect(res.body.error).toBe('invalid-request-error');
        expect(res.body.info).toContain(message);
      }
    }
    // A public address, or a name (judged when the call connects), is accepted.
    expect(
      (await save(app, sampleConfig({ service_options: { openai: { base_url: 'https://llm.example.com/v1' } } })))
        .status,
    ).toBe(200);
    expect(
      (await save(app, sampleConfig({ service_options: { openai: { base_url: 'http://localhost:8000' } } }))).status,
    ).toBe(200);
  });

  it('with SWITCHBOARD_PROVIDER_ALLOW_PRIVATE=true accepts loopback and private model servers, never metadata', async () => {
    app = await createTestApp({ SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: 'true' });
    const ollama = {
      services: { stt: 'deepgram', llm: 'ollama', tts: 'cartesia' },
      service_options: { ollama: { base_url: 'http://127.0.0.1:11434' } },
    };
    expect((await save(app, sampleConfig(ollama))).status).toBe(200);
    expect(
      (await save(app, sampleConfig({ service_options: { openai: { base_url: 'http://10.1.2.3:8000/v1' } } }))).status,
    ).toBe(200);
    const metadata = await save(
      app,
      sampleConfig({ service_options: { openai: { base_url: 'http://[fd00:ec2::254]/' } } }),
    );
    expect(metadata.status).toBe(400);
    expect(metadata.body.info).toContain(
      'service_options.openai.base_url points at fd00:ec2::254, a link-local or metadata address',
    );
  });

  it('a host name that resolves to loopback is refused when the call connects: the caller hears the apology, and the key never leaves', async () => {
    const recorder = await startRecorder();
    const tts = new ToneTts(10);
    server = await startCallServer(
      (registry) => registry.registerStt('scripted_stt', () => new ScriptedStt([])).registerTts('tone_tts', () => tts),
      {},
      { captureLogs: true },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'openai', tts: 'tone_tts' },
      api_keys: { openai: TENANT_KEY },
      service_options: { openai: { base_url: `http://localhost:${recorder.port}` } },
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      scenario: { steps: [{ do: 'wait-bot-audio', timeoutMs: 20_000 }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });

    // The usual handling of a provider that refuses: one plain apology, then the call ends.
    expect(report.outcome).toBe('server-closed');
    expect(tts.pieces.join('')).toContain('not available right now');
    const refused = await server.waitForLog((r) => r.msg === 'openai refused the request; ending the call');
    expect(String(refused.error)).toContain('base_url host localhost resolves to 127.0.0.1, a loopback address');
    expect(JSON.stringify(server.logs)).not.toContain(TENANT_KEY);
    expect(recorder.requests).toEqual([]);
  });

  it('a websocket adapter (cartesia) is refused the same way, before any handshake', async () => {
    const recorder = await startRecorder();
    server = await startCallServer(
      (registry) =>
        registry
          .registerStt('scripted_stt', () => new ScriptedStt([]))
          .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: [GREETING] })),
      {},
      { captureLogs: true },
    );
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'cartesia' },
      api_keys: { cartesia: TENANT_KEY },
      service_options: { cartesia: { base_url: `http://localhost:${recorder.port}` } },
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      scenario: { steps: [{ do: 'wait-bot-audio', timeoutMs: 20_000 }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    // The offline voice apologises instead, as for any TTS that refuses.
    const refused = await server.waitForLog((r) => r.msg === 'cartesia refused the request; ending the call');
    expect(String(refused.error)).toContain('base_url host localhost resolves to 127.0.0.1, a loopback address');
    expect(recorder.requests).toEqual([]);
  });

  it('with the operator switch, a bot reaches its private model server by name and gets its answer', async () => {
    const openai = new OpenAiEmulator({
      latencies: {
        llmFirstTokenMs: 20,
        llmTokensPerSec: 200,
        ttsFirstByteMs: 10,
        ttsRealTimeFactor: 10,
        sttFinalDelayMs: 10,
      },
      replies: [GREETING],
    });
    const emulators = await startEmulatorServer([openai]);
    closers.push(emulators.close);
    const tts = new ToneTts(10);
    server = await startCallServer(
      (registry) => registry.registerStt('scripted_stt', () => new ScriptedStt([])).registerTts('tone_tts', () => tts),
      { SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: 'true' },
    );
    const port = new URL(emulators.url).port;
    const { wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'openai', tts: 'tone_tts' },
      api_keys: { openai: TENANT_KEY },
      service_options: { openai: { base_url: `http://localhost:${port}` } },
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      scenario: {
        steps: [
          { do: 'wait-bot-audio', timeoutMs: 20_000 },
          { do: 'wait-bot-silence', ms: 500, timeoutMs: 20_000 },
        ],
        endOfScript: 'hangup',
        maxDurationMs: 30_000,
      },
    });
    expect(report.outcome).toBe('completed');
    expect(tts.pieces.join('')).toBe(GREETING);
    expect(openai.requests).toHaveLength(1);
    expect(openai.requests[0]!.headers.authorization).toBeDefined();
  });
});

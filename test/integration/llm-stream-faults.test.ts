import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type TestContext, describe, it } from 'vitest';
import { PHRASES } from '../../src/pipeline/call-deps.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * An LLM vendor that answers 200 with an event stream the adapter cannot use: the caller must
 * hear an apology, /metrics must count a provider error, and the log must say which vendor.
 */

/** Events no LLM wire format can read: broken JSON, JSON of no known shape, an HTML page. */
const GARBAGE =
  'data: {"broken": \n\n' +
  'data: 12345\n\n' +
  'event: weird\ndata: {"type":"nonsense","candidates":"no"}\n\n' +
  'data: <html><body>502 Bad Gateway</body></html>\n\n';

/**
 * A vendor endpoint that answers every POST with 200, an event-stream type and `body`; closed
 * when the test finishes.
 */
async function startBrokenVendor(
  body: string,
  onTestFinished: TestContext['onTestFinished'],
): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const vendor: Server = createServer((req, res) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => vendor.listen(0, '127.0.0.1', resolve));
  onTestFinished(async () => {
    vendor.closeAllConnections();
    await new Promise<void>((resolve) => vendor.close(() => resolve()));
  });
  return { url: `http://localhost:${(vendor.address() as AddressInfo).port}`, requests: () => requests };
}

const VENDORS = [
  { llm: 'openai', env: 'SWITCHBOARD_OPENAI_URL' },
  { llm: 'anthropic', env: 'SWITCHBOARD_ANTHROPIC_URL' },
  { llm: 'gemini', env: 'SWITCHBOARD_GEMINI_URL' },
] as const;

const CASES = VENDORS.flatMap((v) => [
  { ...v, fault: 'garbage events', body: GARBAGE },
  { ...v, fault: 'an empty stream', body: '' },
]);

async function providerErrorsCounted(server: CallServer): Promise<number> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
  return Number(/^switchboard_provider_errors_total (\d+)$/m.exec(text)?.[1] ?? 0);
}

// Each case has its own vendor, server and call, and checks no timing: they run at once.
describe('an LLM that answers 200 with nothing readable', () => {
  it.concurrent.for(CASES)(
    '$llm, $fault: the caller hears an apology, the error is counted and logged',
    async ({ llm, env, body }, { expect, onTestFinished }) => {
      const broken = await startBrokenVendor(body, onTestFinished);
      // A short tone a character: the apology's length is not the subject.
      const tts = new ToneTts(10);
      const server = await startCallServer(
        (registry) => {
          registry.registerStt('scripted_stt', () => new ScriptedStt([])).registerTts('tone_tts', () => tts);
        },
        { [env]: broken.url },
        { captureLogs: true },
      );
      onTestFinished(() => server.close());
      const { wssUrl } = await server.createConfig({
        services: { stt: 'scripted_stt', llm, tts: 'tone_tts' },
        config: [],
        api_keys: { [llm]: 'test-key-0123456789' },
      });
      const report = await runPhoneCall({
        target: { wssUrl },
        scenario: {
          steps: [
            { do: 'dtmf', digits: '1#' },
            { do: 'wait-bot-audio', timeoutMs: 15_000 },
            { do: 'wait-bot-silence', ms: 300 },
          ],
        },
      });

      expect(report.outcome).toBe('completed');
      expect(tts.pieces).toEqual([PHRASES.llmFailed]);
      expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(0);
      expect(broken.requests()).toBeGreaterThanOrEqual(1);
      const failure = await server.waitForLog(
        (r) => (r.level as number) >= 40 && r.provider === llm && r.stage === 'llm',
      );
      expect(String(failure.error)).toMatch(/empty|readable/i);
      // The call's provider errors reach /metrics when the call ends (a moment after the hang-up).
      await expect.poll(() => providerErrorsCounted(server), { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    },
  );
});

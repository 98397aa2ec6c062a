import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { readMulawFile } from '../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../src/tools/simulator/phone-call.js';
import { startEmulateProcess } from './capacity.js';
import { createBotConfig, scrapeMetrics, startServerProcess } from './server-process.js';

/**
 * `npx tsc -p . && npx tsx bench/media-flood.ts`: the oversized-media attack against a server in
 * its own process. Senders open media streams on a configuration and send well-formed `media`
 * messages with large payloads far faster than real time, while one ordinary call (greeting,
 * question, answer) runs beside them. Prints the server's RSS and event-loop delay (from
 * /metrics), how long /metrics took to answer, how the senders' sockets were closed, and how the
 * good call went. A script, not a test: it reports, it does not judge.
 */

const { values: args } = parseArgs({
  options: {
    senders: { type: 'string', default: '2' },
    'payload-chars': { type: 'string', default: '45000' },
    'messages-per-sec': { type: 'string', default: '200' },
    'duration-s': { type: 'string', default: '10' },
    /** How long to keep watching after the senders stop. */
    'settle-s': { type: 'string', default: '10' },
  },
});

const SENDERS = Number(args.senders);
const PAYLOAD_CHARS = Number(args['payload-chars']);
const MESSAGES_PER_SEC = Number(args['messages-per-sec']);
const DURATION_MS = Number(args['duration-s']) * 1000;
const SETTLE_MS = Number(args['settle-s']) * 1000;
const FIXTURES = fileURLToPath(new URL('../fixtures/audio', import.meta.url));
/** Stop writing when the server has not read this much of a sender's output (the client's own memory). */
const MAX_CLIENT_BUFFERED_BYTES = 32 * 1024 * 1024;

interface Sample {
  atMs: number;
  rssBytes: number;
  /** Largest event-loop delay since the previous scrape (prom-client resets it on each scrape). */
  loopDelayMaxMs: number;
  /** How long /metrics took to answer. */
  scrapeMs: number;
}

interface SenderResult {
  sent: number;
  skipped: number;
  close: { code: number; reason: string; atMs: number } | null;
}

const t0 = performance.now();
const elapsed = () => Math.round(performance.now() - t0);
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

async function sample(baseUrl: string): Promise<Sample> {
  const before = performance.now();
  const metrics = await scrapeMetrics(baseUrl);
  return {
    atMs: elapsed(),
    rssBytes: metrics.get('process_resident_memory_bytes') ?? NaN,
    loopDelayMaxMs: (metrics.get('nodejs_eventloop_lag_max_seconds') ?? NaN) * 1000,
    scrapeMs: Math.round(performance.now() - before),
  };
}

/** One attacker: `connected`, `start`, then media messages at the given rate until told to stop. */
function runSender(wssUrl: string, index: number, stopAtMs: number): Promise<SenderResult> {
  const streamSid = `MZ${String(index).padStart(32, 'f')}`;
  const payload = 'A'.repeat(PAYLOAD_CHARS - (PAYLOAD_CHARS % 4));
  const message = JSON.stringify({
    event: 'media',
    streamSid,
    media: { track: 'inbound', chunk: '1', timestamp: '0', payload },
  });
  const result: SenderResult = { sent: 0, skipped: 0, close: null };
  return new Promise((resolve) => {
    const ws = new WebSocket(wssUrl);
    let timer: NodeJS.Timeout | undefined;
    ws.on('error', () => undefined);
    ws.on('close', (code, reason) => {
      clearInterval(timer);
      result.close ??= { code, reason: reason.toString(), atMs: elapsed() };
      resolve(result);
    });
    ws.on('open', () => {
      ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
      ws.send(
        JSON.stringify({
          event: 'start',
          sequenceNumber: '1',
          streamSid,
          start: {
            streamSid,
            callSid: `CA${String(index).padStart(32, 'f')}`,
            tracks: ['inbound'],
            customParameters: {},
          },
        }),
      );
      const startedAt = performance.now();
      timer = setInterval(() => {
        const now = performance.now();
        if (now - t0 >= stopAtMs) {
          clearInterval(timer);
          ws.terminate();
          return;
        }
        const due = Math.floor(((now - startedAt) * MESSAGES_PER_SEC) / 1000);
        while (result.sent + result.skipped < due) {
          if (ws.readyState !== ws.OPEN) return;
          if (ws.bufferedAmount > MAX_CLIENT_BUFFERED_BYTES) result.skipped += 1;
          else {
            ws.send(message);
            result.sent += 1;
          }
        }
      }, 5);
    });
  });
}

async function main(): Promise<void> {
  const emulators = await startEmulateProcess([
    '--transcript',
    'do you have a table',
    '--reply',
    'Yes, we have a table for two at eight.',
  ]);
  const server = await startServerProcess({
    SWITCHBOARD_DEEPGRAM_URL: emulators.url,
    SWITCHBOARD_OPENAI_URL: emulators.url,
    SWITCHBOARD_CARTESIA_URL: emulators.url,
  });
  try {
    const id = await createBotConfig(server.baseUrl, {
      bot_profile: 'telephony_ws_voice_2024_09',
      services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
      config: [
        {
          service: 'llm',
          options: [
            { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
            { name: 'run_on_config', value: true },
          ],
        },
      ],
      api_keys: { deepgram: 'x', openai: 'x', cartesia: 'x' },
    });
    const wssUrl = `${server.baseUrl.replace(/^http/, 'ws')}/ws/twilio/${id}`;

    // Let the server settle (model load, JIT), then take the baseline.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await sample(server.baseUrl); // resets the event-loop histogram
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const before = await sample(server.baseUrl);

    const samples: Sample[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push(await sample(server.baseUrl));
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();

    const attackStartMs = elapsed();
    const attackEndMs = attackStartMs + DURATION_MS;
    const goodCall = runPhoneCall({
      target: { wssUrl },
      clips: { question: { mulaw: await readMulawFile(`${FIXTURES}/A06_birch_canoe.ulaw`) } },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
        waitTimeoutMs: 30_000,
      },
    });
    const senders = await Promise.all(Array.from({ length: SENDERS }, (_, i) => runSender(wssUrl, i, attackEndMs)));
    // When the last sender stopped: closed by the server, or at the end of the attack.
    const sendersDoneMs = elapsed();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, sendersDoneMs + SETTLE_MS - elapsed())));
    sampling = false;
    await sampler;
    const after = await sample(server.baseUrl);
    const report = await goodCall;

    // "Busy" = the loop was delayed by more than 100 ms in the interval, or /metrics took over 200 ms.
    const busy = samples.filter((s) => s.loopDelayMaxMs > 100 || s.scrapeMs > 200);
    const senderStop = `the senders stopped (${((sendersDoneMs - attackStartMs) / 1000).toFixed(1)} s)`;
    const lastBusy = busy.at(-1);
    const reply = report.metrics.utterances[0]?.replyLatencyMs ?? null;
    const lines = [
      `media flood: ${SENDERS} senders x ${MESSAGES_PER_SEC} msg/s x ${PAYLOAD_CHARS}-char payloads for ${DURATION_MS / 1000} s`,
      `RSS before ${mb(before.rssBytes)}, peak ${mb(Math.max(...samples.map((s) => s.rssBytes)))}, ${SETTLE_MS / 1000} s after ${senderStop} ${mb(after.rssBytes)}`,
      `event-loop delay max: ${Math.round(Math.max(...samples.map((s) => s.loopDelayMaxMs)))} ms (baseline ${Math.round(before.loopDelayMaxMs)} ms); slowest /metrics answer ${Math.max(...samples.map((s) => s.scrapeMs))} ms`,
      `server busy (loop delay > 100 ms or /metrics > 200 ms) last at ${lastBusy ? `${((lastBusy.atMs - sendersDoneMs) / 1000).toFixed(1)} s from ${senderStop}` : 'never'}`,
      ...senders.map(
        (s, i) =>
          `sender ${i}: ${s.sent} messages sent, ${s.skipped} not sent (unread backlog); ${s.close ? `closed ${s.close.code} "${s.close.reason}" at ${((s.close.atMs - attackStartMs) / 1000).toFixed(2)} s` : 'not closed'}`,
      ),
      `good call: ${report.outcome} (${report.endReason}), reply latency ${reply === null ? 'none' : `${Math.round(reply)} ms`}`,
      '',
      'timeline (s since attack start: RSS, loop delay max, /metrics answer):',
      ...samples.map(
        (s) =>
          `  ${((s.atMs - attackStartMs) / 1000).toFixed(1).padStart(5)}  ${mb(s.rssBytes).padStart(7)}  ${String(Math.round(s.loopDelayMaxMs)).padStart(6)} ms  ${String(s.scrapeMs).padStart(6)} ms`,
      ),
    ];
    console.log(lines.join('\n'));
  } finally {
    await server.stop();
    await emulators.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});

import { get } from 'node:http';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { rms } from '../../src/audio/energy.js';
import { parseWav } from '../../src/audio/wav.js';
import { pinlessSignature } from '../../src/security/webhook-client.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * Call records over real sockets, with real Silero VAD and Playout: a recorded call the caller
 * interrupts, whose record and transcript must say what the caller heard (checked against the
 * recording itself); a call with transcripts off and a status callback that fails, hangs and is
 * retried without holding anything up.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

const QUESTION = 'the birch canoe';
const FOLLOW_UP = 'go forward ten meters';
const REPLY =
  'We have rooms with a view of the harbour and rooms with a garden terrace. Every stay includes breakfast and parking.';
const SECOND_REPLY = 'Of course.';
/**
 * The tone voice speaks each character for this long, the pace of real voices (about 15
 * characters a second), which the call assumes for the sentence in flight when a voice reports
 * no word timings; heard time and heard text then convert.
 */
const MS_PER_CHAR = 65;

let server: CallServer | undefined;
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const close of closers.splice(0)) await close();
});

async function api<T>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T; type: string }> {
  const res = await fetch(`${server!.baseUrl}/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TEST_KEY}`, ...(init.headers as Record<string, string> | undefined) },
  });
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, type, body: (type.includes('json') ? await res.json() : await res.text()) as T };
}

async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Records are checked field by field. */
type Json = any;

async function endedCall(): Promise<Json> {
  const { id } = await eventually(async () => {
    const { body } = await api<Json>('/calls');
    return body.data.find((c: Json) => c.status === 'ended');
  }, 'an ended call record');
  return (await api<Json>(`/calls/${id}`)).body;
}

function fetchBytes(url: string): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))));
      res.on('error', reject);
    }).on('error', reject);
  });
}

/** Start of each stretch of the bot's tone in a track, and how long it lasts (ms on the recording). */
function voicedRuns(track: Int16Array): Array<{ startMs: number; ms: number }> {
  const runs: Array<{ startMs: number; ms: number }> = [];
  let current: { startMs: number; ms: number } | undefined;
  for (let i = 0; i + 160 <= track.length; i += 160) {
    const voiced = rms(track.subarray(i, i + 160)) > 1000;
    if (voiced) {
      if (!current || current.startMs + current.ms < i / 8) {
        current = { startMs: i / 8, ms: 0 };
        runs.push(current);
      }
      current.ms = i / 8 + 20 - current.startMs;
    }
  }
  return runs;
}

describe('the record of a call the caller interrupts', () => {
  it('holds the outcome, each turn’s breakdown, and the transcript as heard, matching the recording', async () => {
    const stt = new ScriptedStt([QUESTION, FOLLOW_UP, 'thanks']);
    const llm = new ScriptedLlm({ replies: [REPLY, SECOND_REPLY] });
    const tts = new ToneTts(MS_PER_CHAR, 20, undefined, 0, { realTime: true });
    server = await startCallServer((registry) => {
      registry
        .registerStt('scripted_stt', () => stt)
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    });
    const { id: configId, wssUrl } = await server.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      // No greeting: the caller speaks first.
      config: [
        { service: 'llm', options: [{ name: 'initial_messages', value: [{ role: 'system', content: 'A hotel.' }] }] },
      ],
      recording_settings: { type: 'cloud' },
    });
    const report = await runPhoneCall({
      target: { wssUrl },
      clips: {
        // The first 1.2 s of the sentence, up to its first pause: the question's length is not the
        // subject, and the caller says it in real time.
        question: { mulaw: (await readMulawFile(fixture('A06_birch_canoe.ulaw'))).slice(0, 1200 * 8) },
        forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
      },
      scenario: {
        steps: [
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-audio', thenMs: 1500 },
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-audio' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    expect(report.metrics.utterances[1]!.bargeIn).toBe(true);

    const call = await endedCall();
    expect(call).toMatchObject({
      kind: 'phone',
      status: 'ended',
      bot_config_id: configId,
      call_sid: report.callSid,
      outcome: 'caller_hung_up',
      has_transcript: true,
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    });
    expect(call.counts).toMatchObject({ turns: 2, barge_ins: 1, pauses: 1, resumes: 0, apologies: 0 });
    expect(call.duration_ms).toBeGreaterThan(3000);

    // Every stage of the interrupted answer, in the order the pipeline goes through them.
    const [first, second] = call.turns as Json[];
    const stages = [
      'caller_last_voiced_ms',
      'vad_stop_ms',
      'stt_final_ms',
      'llm_request_ms',
      'llm_first_token_ms',
      'tts_first_audio_ms',
      'first_frame_sent_ms',
      'ended_ms',
    ];
    for (const turn of [first, second]) {
      const times = stages.map((stage) => turn[stage] as number);
      expect(
        times.every((t) => typeof t === 'number'),
        JSON.stringify(turn),
      ).toBe(true);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
      expect(turn.response_ms).toBe(turn.first_frame_sent_ms - turn.caller_last_voiced_ms);
    }
    expect(first.interruption.onset_ms).toBeLessThanOrEqual(first.interruption.clear_ms);
    expect(first.interruption.onset_ms).toBeGreaterThan(first.first_frame_sent_ms);
    expect(second.interruption).toBeUndefined();
    expect(call.median_response_ms).toBe(Math.min(first.response_ms, second.response_ms));

    // The transcript: both caller turns from the STT finals, the bot's first reply cut where the caller cut it.
    const transcript = (await api<Json>(`/calls/${call.id}/transcript`)).body;
    const entries = transcript.entries as Json[];
    expect(entries.map((e) => e.speaker)).toEqual(['caller', 'bot', 'caller', 'bot']);
    expect(entries[0].text).toBe(QUESTION);
    expect(entries[2].text).toBe(FOLLOW_UP);
    expect(entries[3]).toMatchObject({ text: SECOND_REPLY });
    expect(entries[3].interrupted).toBeUndefined();
    const cut = entries[1];
    expect(cut.interrupted).toBe(true);
    const heardText = (cut.text as string).replace(/…$/, '');
    expect(REPLY.startsWith(heardText)).toBe(true);
    expect(heardText.length).toBeGreaterThan(0);
    expect(heardText.length).toBeLessThan(REPLY.length);
    for (let i = 1; i < entries.length; i++)
      expect(entries[i].start_ms).toBeGreaterThanOrEqual(entries[i - 1].start_ms);

    // What the caller heard of the first reply, measured on the recording's bot track, is what the
    // cut text takes to say (the tone voice gives each character 65 ms): to within a word.
    const recording = await eventually(async () => {
      const { body } = await api<Json>(`/recordings/${call.recording_id}`);
      return body.status === 'finished' ? body : undefined;
    }, 'the finished recording');
    expect(recording).toMatchObject({
      isVttEnabled: true,
      call_id: call.id,
      vtt_url: `/v1/calls/${call.id}/transcript.vtt`,
    });
    const link = await api<Json>(`/recordings/${call.recording_id}/access-link?track=bot`);
    const bot = parseWav(await fetchBytes(link.body.download_link)).samples;
    const runs = voicedRuns(bot);
    expect(runs, JSON.stringify(runs)).toHaveLength(2);
    const heardMs = runs[0]!.ms;
    console.log(
      `first reply heard ${heardMs} ms on the recording (record says ${first.heard_ms} ms); transcript keeps "${heardText}" (${heardText.length} chars, ${heardText.length * MS_PER_CHAR} ms of voice)`,
    );
    expect(Math.abs(heardText.length * MS_PER_CHAR - heardMs)).toBeLessThan(500);
    expect(Math.abs(first.heard_ms - heardMs)).toBeLessThan(200);
    // The transcript's times are the recording's: the bot's cues start where its voice does.
    expect(Math.abs(cut.start_ms - runs[0]!.startMs)).toBeLessThan(250);
    expect(Math.abs(entries[3].start_ms - runs[1]!.startMs)).toBeLessThan(250);

    // WebVTT, by Accept or by extension, with one cue per entry in its speaker's voice.
    const byAccept = await api<string>(`/calls/${call.id}/transcript`, { headers: { accept: 'text/vtt' } });
    const byPath = await api<string>(`/calls/${call.id}/transcript.vtt`);
    expect(byAccept.type).toContain('text/vtt');
    expect(byPath.body).toBe(byAccept.body);
    expect(byPath.body.startsWith('WEBVTT\n\n')).toBe(true);
    expect(byPath.body.match(/-->/g)).toHaveLength(4);
    expect(byPath.body).toContain(`<v Caller>${QUESTION}</v>`);
    expect(byPath.body).toContain(`<v Bot>${cut.text}</v>`);

    // The per-vendor stage histograms.
    const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_turn_stage_seconds_count\{stage="llm_first_token",vendor="scripted_llm"\} 2/);
    expect(metrics).toMatch(/switchboard_turn_stage_seconds_count\{stage="stt_final",vendor="scripted_stt"\} 2/);
    expect(metrics).toMatch(/switchboard_turn_stage_seconds_count\{stage="tts_first_audio",vendor="tone_tts"\} 2/);

    // Deleting the call deletes its transcript; the recording stays, without one.
    expect((await api<Json>(`/calls/${call.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api<Json>(`/calls/${call.id}`)).status).toBe(404);
    expect((await api<Json>(`/calls/${call.id}/transcript.vtt`)).status).toBe(404);
    expect((await api<Json>(`/recordings/${call.recording_id}`)).body.isVttEnabled).toBe(false);
  });
});

/** A customer's status_callback receiver that answers each attempt as scripted ('hang' never answers until released). */
async function startReceiver(script: Array<number | 'hang'>) {
  const attempts: Array<{ raw: string; timestamp?: string; signature?: string; atMs: number }> = [];
  const hanging: ServerResponse[] = [];
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      attempts.push({
        raw: Buffer.concat(chunks).toString(),
        timestamp: req.headers['x-switchboard-timestamp'] as string | undefined,
        signature: req.headers['x-switchboard-signature'] as string | undefined,
        atMs: performance.now(),
      });
      const answer = script[attempts.length - 1] ?? 200;
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  closers.push(close);
  return { url: `http://localhost:${port}/call-ended`, attempts, hanging };
}

const SECRET = Buffer.from('status callback secret, 32 bytes').toString('base64');

async function startShortCallServer() {
  const stt = new ScriptedStt([QUESTION]);
  const llm = new ScriptedLlm({ replies: ['Welcome.', 'Lovely.'] });
  server = await startCallServer((registry) => {
    registry
      .registerStt('scripted_stt', () => stt)
      .registerLlm('scripted_llm', () => llm)
      .registerTts('tone_tts', () => new ToneTts());
  });
  return server;
}

const shortCall = (wssUrl: string) =>
  runPhoneCall({
    target: { wssUrl },
    clips: { birch: { mulaw: new Uint8Array(0) } },
    scenario: { steps: [{ do: 'wait-bot-silence', ms: 400 }] },
  });

describe('the status callback', () => {
  it('is signed, retried with backoff, carries the summary, and never holds up the call', async () => {
    // The first attempt hangs (no answer until its timeout), the second is refused, the third delivered.
    const receiver = await startReceiver(['hang', 500, 200]);
    const call = await startShortCallServer();
    const { wssUrl } = await call.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      call_record_settings: { transcript: false },
      status_callback: { url: receiver.url, hmac: SECRET },
    });
    const report = await shortCall(wssUrl);
    expect(report.outcome).toBe('completed');

    // The record is written while the receiver still hangs on the first attempt.
    const record = await endedCall();
    await eventually(async () => (receiver.attempts.length > 0 ? true : undefined), 'the first attempt');
    expect(receiver.hanging).toHaveLength(1);
    expect(record).toMatchObject({ has_transcript: false, outcome: 'caller_hung_up', status: 'ended' });
    expect((await api<Json>(`/calls/${record.id}/transcript`)).status).toBe(404);

    await eventually(async () => (receiver.attempts.length >= 3 ? true : undefined), 'the third attempt', 30_000);
    for (const attempt of receiver.attempts) {
      expect(attempt.signature).toBe(pinlessSignature(SECRET, attempt.timestamp!, attempt.raw));
      expect(JSON.parse(attempt.raw)).toEqual({
        event: 'call.ended',
        call: JSON.parse(receiver.attempts[0]!.raw).call,
      });
    }
    const delivered = JSON.parse(receiver.attempts[2]!.raw);
    expect(delivered.call).toMatchObject({ id: record.id, call_sid: report.callSid, outcome: 'caller_hung_up' });
    expect(delivered.call.turns).toBeUndefined();
    // Backoff: 1 s after the first attempt timed out, 2 s after the refusal.
    expect(receiver.attempts[2]!.atMs - receiver.attempts[1]!.atMs).toBeGreaterThanOrEqual(1990);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(receiver.attempts).toHaveLength(3);
  });

  it('a receiver that never answers does not hold up the server’s shutdown', async () => {
    const receiver = await startReceiver(['hang', 'hang', 'hang', 'hang']);
    const call = await startShortCallServer();
    const { wssUrl } = await call.createConfig({
      services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
      config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      status_callback: { url: receiver.url, hmac: SECRET },
    });
    await shortCall(wssUrl);
    await endedCall();
    await eventually(async () => (receiver.attempts.length > 0 ? true : undefined), 'the first attempt');
    // Closing resolves while the attempt is still unanswered at the receiver.
    await call.close();
    server = undefined;
    expect(receiver.hanging.every((res) => !res.writableEnded)).toBe(true);
    expect(receiver.attempts).toHaveLength(1);
  });
});

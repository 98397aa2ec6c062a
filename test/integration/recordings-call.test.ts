import { get } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { rms } from '../../src/audio/energy.js';
import { decodeMulaw } from '../../src/audio/mulaw.js';
import { parseWav } from '../../src/audio/wav.js';
import type { CallReport } from '../../src/tools/simulator/call-report.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ASSUMED_ACCESS_KEY_ID, FakeS3Server } from '../fakes/fake-s3-server.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';

/**
 * Recorded phone calls over real sockets: the simulator plays a fixture the way Twilio does, the
 * server runs the real transport, VAD and Playout with the recorder tapped in; the files are then
 * fetched through the API's access link and compared with what was sent.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const SAMPLES_PER_MS = 8;

let server: CallServer | undefined;
let s3: FakeS3Server | undefined;

afterEach(async () => {
  await server?.close();
  await s3?.close();
  server = undefined;
  s3 = undefined;
});

interface RecordingJson {
  id: string;
  room_name: string;
  status: string;
  duration?: number;
  start_ts: number;
  max_participants: number;
  s3key: string;
  mtgSessionId: string;
  share_token: string | null;
  isVttEnabled: boolean;
  tracks: Array<{ name: string; type: string; s3Key: string; size: number; duration_ms: number }> | null;
}

async function api<T>(path: string, init: RequestInit = {}): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server!.baseUrl}/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TEST_KEY}` },
  });
  return { status: res.status, body: (await res.json()) as T };
}

/** Polls until `check` returns a value: the row is finished (and uploaded) just after the call. */
async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function finishedRecording(predicate: (r: RecordingJson) => boolean = () => true): Promise<RecordingJson> {
  return eventually(async () => {
    const { body } = await api<{ data: RecordingJson[] }>('/recordings');
    return body.data.find((r) => r.status === 'finished' && predicate(r));
  }, 'a finished recording');
}

async function download(id: string, track: string): Promise<{ url: string; wav: Int16Array; bytes: Uint8Array }> {
  const link = await api<{ download_link: string; expires: number }>(`/recordings/${id}/access-link?track=${track}`);
  expect(link.status).toBe(200);
  const res = await fetchOnce(link.body.download_link);
  expect(res.status).toBe(200);
  expect(res.contentType).toContain('audio/wav');
  const bytes = res.body;
  const parsed = parseWav(bytes);
  expect(parsed.sampleRateHz).toBe(8000);
  expect(parsed.channels).toBe(1);
  // The header's sizes were fixed up: the data chunk says exactly what the file holds.
  expect(new DataView(bytes.buffer, bytes.byteOffset).getUint32(40, true)).toBe(bytes.length - 44);
  return { url: link.body.download_link, wav: parsed.samples, bytes };
}

/**
 * A GET on its own connection, closed after the response: a pooled keep-alive connection that
 * goes idle just after the server starts closing would hold the close for the keep-alive timeout.
 */
function fetchOnce(url: string): Promise<{ status: number; contentType: string; body: Uint8Array }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          contentType: String(res.headers['content-type']),
          body: new Uint8Array(Buffer.concat(chunks)),
        }),
      );
      res.on('error', reject);
    }).on('error', reject);
  });
}

const windowRms = (track: Int16Array, fromMs: number, toMs: number) =>
  rms(track.subarray(Math.max(0, Math.round(fromMs * SAMPLES_PER_MS)), Math.round(toMs * SAMPLES_PER_MS)));

/** Where the whole of `clip` appears, frame-aligned, in `track`; -1 if it does not. */
function findClip(track: Int16Array, clip: Int16Array): number[] {
  const found: number[] = [];
  for (let p = 0; p + clip.length <= track.length; p += 160) {
    let i = 0;
    while (i < clip.length && track[p + i] === clip[i]) i++;
    if (i === clip.length) found.push(p);
  }
  return found;
}

/** The start of each 20 ms frame of `track` with the bot's tone in it, in ms on the recording. */
function voicedFramesMs(track: Int16Array): number[] {
  const starts: number[] = [];
  for (let i = 0; i < track.length; i += 160)
    if (rms(track.subarray(i, i + 160)) > 1000) starts.push(i / SAMPLES_PER_MS);
  return starts;
}

function botSegments(report: CallReport): Array<{ startMs: number; endMs: number }> {
  const starts = report.timeline.filter((e) => e.kind === 'bot-audio-start').map((e) => e.atMs);
  const ends = report.timeline.filter((e) => e.kind === 'bot-audio-end').map((e) => e.atMs);
  return starts.map((startMs, i) => ({ startMs, endMs: ends[i] ?? report.durationMs }));
}

async function startRecordedBot(env: Record<string, string> = {}) {
  const stt = new ScriptedStt([
    'the birch canoe slid on the smooth planks',
    'the birch canoe slid on the smooth planks',
  ]);
  const llm = new ScriptedLlm({
    replies: ['Welcome to the Harbour Hotel.', 'That sounds lovely.', 'Welcome back.', 'Hello again.'],
  });
  const tts = new ToneTts();
  server = await startCallServer((registry) => {
    registry
      .registerStt('scripted_stt', () => stt)
      .registerLlm('scripted_llm', () => llm)
      .registerTts('tone_tts', () => tts);
  }, env);
  return server;
}

const recordedConfig = (recording_settings: Record<string, unknown>) => ({
  services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
  config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
  recording_settings,
});

describe('a recorded phone call', () => {
  it('records caller, bot and mix on one timeline, lists it, and serves it through an access link', async () => {
    const call = await startRecordedBot();
    const { wssUrl } = await call.createConfig(recordedConfig({ type: 'cloud' }));
    const birch = await readMulawFile(fixture('A06_birch_canoe.ulaw'));
    const report = await runPhoneCall({
      target: { wssUrl },
      clips: { birch: { mulaw: birch } },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');

    const recording = await finishedRecording();
    expect(recording).toMatchObject({
      room_name: report.callSid,
      max_participants: 2,
      // The call has a transcript beside the recording (call records).
      isVttEnabled: true,
      share_token: null,
    });
    expect(recording.tracks!.map((t) => t.name)).toEqual(['caller', 'bot']);

    const caller = (await download(recording.id, 'caller')).wav;
    const bot = (await download(recording.id, 'bot')).wav;
    const mixed = (await download(recording.id, 'mixed')).wav;
    const callMs = report.durationMs;
    const callerMs = caller.length / SAMPLES_PER_MS;
    // eslint-disable-next-line no-console
    console.log(
      `call ${callMs} ms, caller sent ${report.metrics.caller.framesSent * 20} ms; recorded caller ${callerMs} ms, bot ${bot.length / 8} ms, mixed ${mixed.length / 8} ms, row duration ${recording.duration} s`,
    );

    // The caller track holds all the caller sent, on the server's timeline of the call (which also
    // counts the moments before the first frame and after the last: set-up and hang-up); all three
    // files on one timeline.
    const sentMs = report.metrics.caller.framesSent * 20;
    expect(callerMs).toBeGreaterThanOrEqual(sentMs);
    expect(bot.length).toBe(caller.length);
    expect(mixed.length).toBe(caller.length);
    expect(recording.duration).toBe(Math.round(callerMs / 1000));
    expect(recording.tracks![0]!.duration_ms).toBe(Math.round(callerMs));

    // The whole fixture is in the caller track, sample for sample, once.
    const utterance = report.metrics.utterances[0]!;
    const at = findClip(caller, decodeMulaw(birch));
    expect(at).toHaveLength(1);
    // In order on the recording's own timeline: after the greeting ended in the bot track, and
    // well into it before the reply began (the caller was in mid-sentence for its first second,
    // which no turn ends in). Not more exactly: caller frames are placed as the server read them,
    // and a caller that falls behind and then catches up (the simulator on a loaded machine does)
    // lands the clip's tail late, over the start of the reply it already had.
    const clipStartMs = at[0]! / SAMPLES_PER_MS;
    const clipEndMs = clipStartMs + birch.length / SAMPLES_PER_MS;
    const botVoiced = voicedFramesMs(bot);
    expect(botVoiced.some((ms) => ms < clipStartMs)).toBe(true);
    expect(botVoiced.some((ms) => ms >= clipEndMs)).toBe(true);
    expect(botVoiced.filter((ms) => ms >= clipStartMs && ms < clipStartMs + 1000)).toEqual([]);
    // And the caller was silent the rest of the time.
    expect(windowRms(caller, 0, at[0]! / SAMPLES_PER_MS)).toBeLessThan(1);
    expect(windowRms(caller, clipEndMs, callerMs)).toBeLessThan(1);

    // The bot's two replies are where the caller heard them, and the bot was quiet while the caller spoke.
    const segments = botSegments(report);
    expect(segments).toHaveLength(2);
    for (const segment of segments)
      expect(windowRms(bot, segment.startMs + 100, segment.endMs - 100)).toBeGreaterThan(2000);
    expect(windowRms(bot, utterance.startMs + 100, utterance.endMs! - 100)).toBeLessThan(1);
    expect(Math.abs(botVoiced.length * 20 - report.metrics.bot.playedAudioMs)).toBeLessThan(200);

    // The mix is the two tracks summed.
    let mismatches = 0;
    for (let i = 0; i < mixed.length; i++)
      if (mixed[i] !== Math.max(-32768, Math.min(32767, caller[i]! + bot[i]!))) mismatches++;
    expect(mismatches).toBe(0);
  });
});

describe('recordings in an S3-compatible bucket', () => {
  it('uploads after the call, links presigned or relayed, honours allow_api_access, follows assume_role_arn, deletes', async () => {
    s3 = new FakeS3Server();
    const endpoint = await s3.start();
    const call = await startRecordedBot({
      SWITCHBOARD_S3_ENDPOINT: endpoint,
      SWITCHBOARD_STS_ENDPOINT: endpoint,
      AWS_ACCESS_KEY_ID: 'AKIAFAKESWITCHBOARD1',
      AWS_SECRET_ACCESS_KEY: 'fake-secret-key-for-tests',
    });
    const bucket = { bucket_name: 'calls', bucket_region: 'eu-west-1' };
    const { id: configId, wssUrl } = await call.createConfig(
      recordedConfig({ type: 'cloud', recordings_bucket: { ...bucket, allow_streaming_from_bucket: true } }),
    );
    const shortCall = () =>
      runPhoneCall({ target: { wssUrl }, scenario: { steps: [{ do: 'wait-bot-silence', ms: 400 }] } });
    const reconfigure = async (recordings_bucket: Record<string, unknown>) => {
      const res = await fetch(`${call.baseUrl}/v1/bots/twilio-config/${configId}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          bot_profile: 'telephony_ws_voice_2024_09',
          ...recordedConfig({ type: 'cloud', recordings_bucket }),
        }),
      });
      expect(res.status).toBe(200);
    };
    const uploaded = async (id: string) =>
      eventually(async () => (s3!.objects.has(`calls/${await keyOf(id)}`) ? true : undefined), 'the upload');
    const keyOf = async (id: string) => (await api<RecordingJson>(`/recordings/${id}`)).body.s3key;

    // 1. Streaming from the bucket: the link is a presigned URL to the bucket itself.
    const first = await shortCall();
    const streamed = await finishedRecording((r) => r.room_name === first.callSid);
    await uploaded(streamed.id);
    expect(s3.objects.size).toBe(3);
    for (const request of s3.requests.filter((r) => r.method === 'PUT')) {
      expect(request).toMatchObject({ bucket: 'calls', signedBy: 'header', accessKeyId: 'AKIAFAKESWITCHBOARD1' });
    }
    expect(s3.rejected).toEqual([]);
    const presigned = await download(streamed.id, 'mixed');
    expect(presigned.url.startsWith(`${endpoint}/calls/`)).toBe(true);
    expect(new URL(presigned.url).searchParams.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
    expect(Buffer.from(presigned.bytes).equals(s3.objects.get(`calls/${streamed.s3key}`)!)).toBe(true);
    expect(s3.requests.at(-1)).toMatchObject({ method: 'GET', signedBy: 'query' });

    // 2. No streaming from the bucket: this service relays the object behind its own signed link.
    await reconfigure({ ...bucket, assume_role_arn: 'arn:aws:iam::123456789012:role/recordings' });
    const second = await shortCall();
    const relayed = await finishedRecording((r) => r.room_name === second.callSid);
    await uploaded(relayed.id);
    // The upload ran with the assumed role's temporary credentials.
    expect(s3.assumedRoles).toEqual(['arn:aws:iam::123456789012:role/recordings']);
    const assumedPuts = s3.requests.filter((r) => r.method === 'PUT' && r.accessKeyId === ASSUMED_ACCESS_KEY_ID);
    expect(assumedPuts).toHaveLength(3);
    const relayedFile = await download(relayed.id, 'caller');
    expect(relayedFile.url.startsWith(`${call.baseUrl}/recording-downloads/`)).toBe(true);
    expect(Buffer.from(relayedFile.bytes).equals(s3.objects.get(`calls/${relayed.tracks![0]!.s3Key}`)!)).toBe(true);

    // 3. allow_api_access false: listed, but no link.
    await reconfigure({ ...bucket, allow_api_access: false });
    const third = await shortCall();
    const locked = await finishedRecording((r) => r.room_name === third.callSid);
    await uploaded(locked.id);
    const refused = await api<{ error: string; info: string }>(`/recordings/${locked.id}/access-link`);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden-error');
    expect(refused.body.info).toContain('allow_api_access');

    // Deleting removes the row and the bucket's objects.
    const before = s3.objects.size;
    const deleted = await api<RecordingJson>(`/recordings/${streamed.id}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    expect(s3.objects.size).toBe(before - 3);
    expect((await api(`/recordings/${streamed.id}`)).status).toBe(404);
    expect(s3.rejected).toEqual([]);
  });
});

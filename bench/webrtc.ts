import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import OpusScript from 'opusscript';
import { RtpHeader, RtpPacket } from 'werift';
import WebSocket from 'ws';
import { resample } from '../src/audio/resample.js';
import { parseWav } from '../src/audio/wav.js';
import { connectWebRtc, type TestWebRtcClient } from '../test/helpers/webrtc-client.js';
import { startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { benchEmulatorArgs } from './latency.js';
import { BENCH_API_KEY, startServerProcess } from './server-process.js';

/**
 * `npm run bench:webrtc`: rooms over the websocket and over WebRTC, side by side, on one server
 * process (built, in its own process, bots on the vendor emulators). Each room has one participant
 * in this process speaking a fixture in real time (a question, then quiet, over and over) and
 * hearing the bot. Printed: the server's CPU per room at 20 and 50 rooms for each transport, the
 * bandwidth per room each way (on the wire: payload plus RTP/SRTP/UDP/IPv4 headers for WebRTC,
 * payload plus websocket/TCP/IPv4 headers for the socket), and the time from the end of the
 * question to the bot's first audio at the participant, whose difference between the transports
 * is what WebRTC adds on loopback (a browser adds its jitter buffer to both). A script, not a test.
 */

const { values: args } = parseArgs({
  options: {
    rooms: { type: 'string', default: '20,50' },
    'window-s': { type: 'string', default: '20' },
  },
});

const FIXTURE = fileURLToPath(new URL('../fixtures/audio/A06_birch_canoe.8k.wav', import.meta.url));
const FRAME_MS = 20;
/** The participant's cycle: 1 s quiet, the question, 7 s quiet (the bot answers in it). */
const LEAD_QUIET_MS = 1000;
const TAIL_QUIET_MS = 7000;
const LOUD = 500;
/** Per-packet headers on the wire: RTP 12 + SRTP tag 10 + UDP 8 + IPv4 20; websocket 6 (masked client frame: 8) + TCP 20 + IPv4 20. */
const RTP_OVERHEAD_BYTES = 50;
const WS_OVERHEAD_BYTES = 46;

interface Participant {
  sentBytes: number;
  receivedBytes: number;
  /** Question end → first loud bot audio after it, ms, one per cycle. */
  latenciesMs: number[];
  stop(): Promise<void>;
}

function cycle(rateHz: number): Int16Array {
  const speech = resample(parseWav(readFileSync(FIXTURE)).samples, 8000, rateHz);
  const out = new Int16Array(((LEAD_QUIET_MS + TAIL_QUIET_MS) * rateHz) / 1000 + speech.length);
  out.set(speech, (LEAD_QUIET_MS * rateHz) / 1000);
  return out;
}

/** Sends one 20 ms frame of `pcm` per 20 ms of wall time, looping; tracks when the question ends. */
function speaker(rateHz: number, send: (frame: Int16Array) => void) {
  const pcm = cycle(rateHz);
  const frameSamples = (rateHz * FRAME_MS) / 1000;
  const speechEndSample = pcm.length - (TAIL_QUIET_MS * rateHz) / 1000;
  const state = { questionEndedAtMs: undefined as number | undefined, awaitingBot: false };
  let at = 0;
  const startMs = performance.now();
  let sent = 0;
  const timer = setInterval(() => {
    const due = Math.floor((performance.now() - startMs) / FRAME_MS);
    for (; sent < due; sent++) {
      send(pcm.subarray(at, at + frameSamples));
      at += frameSamples;
      if (at >= speechEndSample && at - frameSamples < speechEndSample) {
        state.questionEndedAtMs = performance.now();
        state.awaitingBot = true;
      }
      if (at + frameSamples > pcm.length) at = 0;
    }
  }, 5);
  return { state, stop: () => clearInterval(timer) };
}

const peak = (pcm: Int16Array) => pcm.reduce((m, x) => Math.max(m, Math.abs(x)), 0);

async function startRoom(baseUrl: string, transport: 'websocket' | 'webrtc'): Promise<Record<string, any>> {
  const response = await fetch(`${baseUrl}/v1/bots/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${BENCH_API_KEY}` },
    body: JSON.stringify({
      bot_profile: 'voice_2024_10',
      services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
      config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
      api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
      max_duration: 600,
      ...(transport === 'webrtc' ? { transport: 'webrtc' } : {}),
    }),
  });
  if (!response.ok) throw new Error(`bots/start: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, any>;
}

async function websocketParticipant(baseUrl: string): Promise<Participant> {
  const { room_url, token } = await startRoom(baseUrl, 'websocket');
  const socket = new WebSocket(`${String(room_url).replace(/^http/, 'ws')}/ws`, ['rtvi-ai', token]);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const p: Participant = { sentBytes: 0, receivedBytes: 0, latenciesMs: [], stop: async () => undefined };
  const rateHz = 16000;
  socket.send(JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', data: { audio: { sampleRateHz: rateHz } } }));
  const mic = speaker(rateHz, (frame) => {
    const bytes = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
    p.sentBytes += bytes.length + WS_OVERHEAD_BYTES + 2;
    socket.send(bytes);
  });
  socket.on('message', (data, isBinary) => {
    const bytes = data as Buffer;
    p.receivedBytes += bytes.length + WS_OVERHEAD_BYTES;
    if (!isBinary || !mic.state.awaitingBot) return;
    if (peak(new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))) > LOUD) {
      mic.state.awaitingBot = false;
      p.latenciesMs.push(performance.now() - mic.state.questionEndedAtMs!);
    }
  });
  p.stop = async () => {
    mic.stop();
    socket.close();
  };
  return p;
}

async function webrtcParticipant(baseUrl: string): Promise<Participant> {
  const answer = await startRoom(baseUrl, 'webrtc');
  const client: TestWebRtcClient = await connectWebRtc(answer.webrtcRequestParams.endpoint);
  client.dc.send(JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', id: 'ready', data: { version: '1.0.0' } }));
  const p: Participant = { sentBytes: 0, receivedBytes: 0, latenciesMs: [], stop: async () => undefined };
  // The browser's side: Opus at 48 kHz, 20 ms packets; the bot decoded as a browser would.
  const encoder = new OpusScript(48000, 1, OpusScript.Application.VOIP);
  encoder.setBitrate(32000);
  const decoder = new OpusScript(48000, 1, OpusScript.Application.VOIP);
  const audio = client.pc.getTransceivers()[0]!;
  let sequenceNumber = 0;
  let timestamp = 0;
  const mic = speaker(48000, (frame) => {
    const payload = encoder.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), frame.length);
    p.sentBytes += payload.length + RTP_OVERHEAD_BYTES;
    const header = new RtpHeader({ sequenceNumber, timestamp, payloadType: 111 });
    sequenceNumber = (sequenceNumber + 1) & 0xffff;
    timestamp = (timestamp + 960) >>> 0;
    void audio.sender.sendRtp(new RtpPacket(header, payload)).catch(() => undefined);
  });
  // Keep-alive as the client sends it.
  const ping = setInterval(() => client.dc.readyState === 'open' && client.dc.send(`ping: ${Date.now()}`), 1000);
  audio.onTrack.subscribe((track) =>
    track.onReceiveRtp.subscribe((rtp) => {
      p.receivedBytes += rtp.payload.length + RTP_OVERHEAD_BYTES;
      if (!mic.state.awaitingBot) return;
      const pcm = decoder.decode(rtp.payload);
      if (peak(new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1)) > LOUD) {
        mic.state.awaitingBot = false;
        p.latenciesMs.push(performance.now() - mic.state.questionEndedAtMs!);
      }
    }),
  );
  p.stop = async () => {
    mic.stop();
    clearInterval(ping);
    await client.close();
    encoder.delete();
    decoder.delete();
  };
  return p;
}

function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!;
};

async function main(): Promise<void> {
  const pinning = cpuPinning();
  process.stdout.write(`${pinning.describe}\n`);
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const vendors = emulators.url;
  const server = await startServerProcess(
    {
      SWITCHBOARD_DEEPGRAM_URL: vendors,
      SWITCHBOARD_OPENAI_URL: vendors,
      SWITCHBOARD_CARTESIA_URL: vendors,
      SWITCHBOARD_MAX_ROOMS: '200',
    },
    [],
    pinning.server,
  );
  const windowS = Number(args['window-s']);
  const rows: string[] = [];
  try {
    for (const count of args.rooms.split(',').map(Number)) {
      for (const transport of ['websocket', 'webrtc'] as const) {
        const participants: Participant[] = [];
        for (let i = 0; i < count; i++)
          participants.push(await (transport === 'webrtc' ? webrtcParticipant : websocketParticipant)(server.baseUrl));
        // Warm up: every room greeted and talking.
        await new Promise((resolve) => setTimeout(resolve, 5000));
        const sent0 = participants.reduce((s, p) => s + p.sentBytes, 0);
        const received0 = participants.reduce((s, p) => s + p.receivedBytes, 0);
        const cpu0 = cpuSecondsOf(server.child.pid!);
        const t0 = performance.now();
        await new Promise((resolve) => setTimeout(resolve, windowS * 1000));
        const elapsedS = (performance.now() - t0) / 1000;
        const cpuPct = ((cpuSecondsOf(server.child.pid!) - cpu0) / elapsedS) * 100;
        const upKbps = ((participants.reduce((s, p) => s + p.sentBytes, 0) - sent0) * 8) / elapsedS / 1000 / count;
        const downKbps =
          ((participants.reduce((s, p) => s + p.receivedBytes, 0) - received0) * 8) / elapsedS / 1000 / count;
        const latencies = participants.flatMap((p) => p.latenciesMs);
        const row = `${transport.padEnd(9)} ${String(count).padStart(3)} rooms: server CPU ${cpuPct.toFixed(1)} % of a core, ${(cpuPct / count).toFixed(2)} % per room; per room up ${upKbps.toFixed(1)} kbit/s, down ${downKbps.toFixed(1)} kbit/s (averaged over talk and silence); question end to first bot audio median ${median(latencies).toFixed(0)} ms (${latencies.length} turns)`;
        process.stdout.write(`${row}\n`);
        rows.push(row);
        for (const p of participants) await p.stop();
        await new Promise((resolve) => setTimeout(resolve, 3000));
      }
    }
  } finally {
    await server.stop();
    await emulators.stop();
  }
}

await main();

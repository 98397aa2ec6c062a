import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { fixturePcm } from '../test/helpers/room-client.js';
import { encodeMicrophone, WebRtcRoomPeer } from '../test/helpers/webrtc-room-peer.js';
import { startEmulateProcess } from './capacity.js';
import { cpuPinning } from './cpu-pinning.js';
import { benchEmulatorArgs } from './latency.js';
import { percentile } from './report.js';
import { BENCH_API_KEY, type ServerProcess, startServerProcess } from './server-process.js';
import { type CountingRelay, startCountingRelay } from './udp-counter.js';

/**
 * `npm run bench:webrtc`: rooms over WebRTC against rooms over the websocket, in one run on one
 * server (built, in its own process, pinned to a core of its own where it can be), with the
 * vendors emulated at the pace of the other benchmarks. Three figures per transport:
 *
 * - CPU per participant at 20 and 50 simultaneous rooms: the server's own CPU time (from
 *   /proc) over a steady window while every participant talks (a question, then silence, again
 *   and again, each at its own phase), less the idle server's, divided by the rooms.
 * - Bandwidth per participant each way, counted on the wire during that window: every WebRTC
 *   participant's UDP goes through a relay that counts datagrams and bytes; a websocket's are
 *   the TCP stream's bytes as its socket counts them.
 * - The latency from the caller's last voiced frame leaving the client to the bot's reply arriving
 *   loud at the client, for a few rooms of each transport at once: what WebRTC adds is the
 *   difference (the turn-taking and vendors' waits are the same for both).
 *
 * The clients run in this process: werift peers (no browser) and plain websockets. A script, not a
 * test: it prints figures and never fails on a slow machine. The machine's load average is printed
 * beside each window, since a shared machine's other work shows in them.
 */

const { values: args } = parseArgs({
  options: {
    rooms: { type: 'string', default: '20,50' },
    'window-s': { type: 'string', default: '15' },
    'warmup-s': { type: 'string', default: '6' },
    'latency-rooms': { type: 'string', default: '4' },
    'latency-turns': { type: 'string', default: '5' },
    out: { type: 'string', default: 'bench-webrtc-report.json' },
  },
});

type Transport = 'websocket' | 'webrtc';
const FRAME_MS = 20;
const WS_RATE_HZ = 16000;
const WS_FRAME_BYTES = (WS_RATE_HZ / 50) * 2;
/** A decoded frame louder than this is the bot speaking (its emulated voice is a tone well above). */
const LOUD_RMS = 0.01;
/** The question's loop: the question, then this much silence. */
const LOOP_SILENCE_MS = 4000;
const JOIN_CONCURRENCY = 2;

const START_BODY = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  api_keys: { deepgram: 'bench', openai: 'bench', cartesia: 'bench' },
  config: [
    {
      service: 'llm',
      options: [
        { name: 'initial_messages', value: [{ role: 'system', content: 'You are a host.' }] },
        { name: 'run_on_config', value: true },
      ],
    },
  ],
  max_duration: 600,
};

/** The caller's audio, frame by frame, as each transport carries it. */
interface Microphone {
  /** 20 ms frames of 16 kHz PCM (websocket rooms) and Opus packets of the same audio at 48 kHz (WebRTC). */
  pcm: Buffer[];
  opus: Buffer[];
  /** Index of the question's last voiced frame within the loop. */
  lastVoicedFrame: number;
  /** Frames of the question itself (the rest of the loop is silence). */
  questionFrames: number;
  silencePcm: Buffer;
  silenceOpus: Buffer;
}

function microphone(): Microphone {
  const question8k = fixturePcm('A06_birch_canoe.8k.wav', 8000);
  let lastVoicedFrame = 0;
  for (let i = 0; i * 160 < question8k.length; i++) {
    const frame = question8k.subarray(i * 160, (i + 1) * 160);
    let sum = 0;
    for (const s of frame) sum += s * s;
    if (Math.sqrt(sum / frame.length) / 32768 > 0.02) lastVoicedFrame = i;
  }
  const pcm16k = fixturePcm('A06_birch_canoe.8k.wav', WS_RATE_HZ);
  const silent16k = new Int16Array((WS_RATE_HZ * LOOP_SILENCE_MS) / 1000);
  const loop16k = new Int16Array(pcm16k.length + silent16k.length);
  loop16k.set(pcm16k);
  const pcm: Buffer[] = [];
  for (let at = 0; at + WS_FRAME_BYTES / 2 <= loop16k.length; at += WS_FRAME_BYTES / 2)
    pcm.push(Buffer.from(loop16k.buffer, loop16k.byteOffset + at * 2, WS_FRAME_BYTES));
  const pcm48k = fixturePcm('A06_birch_canoe.8k.wav', 48000);
  const loop48k = new Int16Array(pcm48k.length + (48000 * LOOP_SILENCE_MS) / 1000);
  loop48k.set(pcm48k);
  const opus = encodeMicrophone(loop48k).slice(0, pcm.length);
  return {
    pcm: pcm.slice(0, opus.length),
    opus,
    lastVoicedFrame,
    questionFrames: Math.ceil(pcm16k.length / (WS_FRAME_BYTES / 2)),
    silencePcm: Buffer.alloc(WS_FRAME_BYTES),
    silenceOpus: encodeMicrophone(new Int16Array(960))[0]!,
  };
}

/** One room's participant, either transport, fed by the shared 20 ms clock. */
interface Participant {
  transport: Transport;
  /** The next frame of the loop it sends (each starts at its own phase). */
  loopAt: number;
  /** Frames queued for a turn of the latency phase (instead of the loop). */
  queue: Array<{ frame: Buffer; onSent?: () => void }>;
  looping: boolean;
  sendFrame(frame: Buffer): void;
  silence: Buffer;
  loop: Buffer[];
  messages: Array<{ type: string }>;
  /** Received bot audio: loud frames' arrival times (latency phase). */
  loudAtMs: number[];
  bytes(): { up: number; down: number; upPackets?: number; downPackets?: number };
  close(): Promise<void>;
}

class WsParticipant {
  readonly messages: Array<{ type: string }> = [];
  readonly loudAtMs: number[] = [];
  private constructor(
    private readonly socket: WebSocket,
    private readonly measure: boolean,
  ) {
    socket.on('message', (data, isBinary) => {
      if (!isBinary) {
        this.messages.push(JSON.parse(data.toString()) as { type: string });
        return;
      }
      if (!this.measure) return;
      const bytes = data as Buffer;
      const pcm = new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.byteLength & ~1)));
      if (rmsOf(pcm) > LOUD_RMS) this.loudAtMs.push(performance.now());
    });
    socket.on('error', () => undefined);
  }

  static async connect(url: string, token: string, measure: boolean): Promise<WsParticipant> {
    const socket = new WebSocket(url, ['rtvi-ai', token]);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const participant = new WsParticipant(socket, measure);
    socket.send(
      JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', data: { audio: { sampleRateHz: WS_RATE_HZ } } }),
    );
    return participant;
  }

  send(frame: Buffer): void {
    if (this.socket.readyState === WebSocket.OPEN) this.socket.send(frame);
  }

  bytes(): { up: number; down: number } {
    // The TCP stream's bytes both ways: the websocket frames' headers included.
    const raw = (this.socket as unknown as { _socket: { bytesRead: number; bytesWritten: number } })._socket;
    return { up: raw.bytesWritten, down: raw.bytesRead };
  }

  async close(): Promise<void> {
    this.socket.send(JSON.stringify({ label: 'rtvi-ai', type: 'disconnect-bot' }));
    this.socket.close(1000);
  }
}

/** What bots/start answers: the room's page and token, or (WebRTC) the offer URL. */
interface Started {
  room_url: string;
  token: string;
  webrtcRequestParams: { endpoint: string };
}

async function startRoom(baseUrl: string, transport: Transport): Promise<Started> {
  const body = transport === 'webrtc' ? { ...START_BODY, transport: 'webrtc' } : START_BODY;
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(`${baseUrl}/v1/bots/start`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.ok) return (await res.json()) as Started;
    if (res.status !== 429 || attempt > 20) throw new Error(`bots/start refused: ${res.status} ${await res.text()}`);
    await sleep(500);
  }
}

async function join(
  server: ServerProcess,
  transport: Transport,
  mic: Microphone,
  options: { measureLatency: boolean; countBytes: boolean },
): Promise<Participant> {
  const started = await startRoom(server.baseUrl, transport);
  const phase = Math.floor(Math.random() * mic.pcm.length);
  if (transport === 'websocket') {
    const name = started.room_url.split('/rooms/')[1];
    const ws = await WsParticipant.connect(
      `${server.baseUrl.replace(/^http/, 'ws')}/rooms/${name}/ws`,
      started.token,
      options.measureLatency,
    );
    return {
      transport,
      loopAt: phase,
      queue: [],
      looping: !options.measureLatency,
      sendFrame: (frame) => ws.send(frame),
      silence: mic.silencePcm,
      loop: mic.pcm,
      messages: ws.messages,
      loudAtMs: ws.loudAtMs,
      bytes: () => ws.bytes(),
      close: () => ws.close(),
    };
  }
  let relay: CountingRelay | undefined;
  if (options.countBytes) relay = await startCountingRelay();
  const peer = await WebRtcRoomPeer.connect({
    endpoint: started.webrtcRequestParams.endpoint,
    decode: options.measureLatency,
    candidates: relay ? 'withheld' : 'offer',
    rewriteAnswer: relay ? (sdp) => relay.rewriteAnswer(sdp) : undefined,
  });
  const loudAtMs: number[] = [];
  let seen = 0;
  return {
    transport,
    loopAt: phase,
    queue: [],
    looping: !options.measureLatency,
    sendFrame: (frame) => peer.sendOpus(frame),
    silence: mic.silenceOpus,
    loop: mic.opus,
    messages: peer.messages,
    get loudAtMs() {
      for (; seen < peer.heard.length; seen++)
        if (peer.heard[seen]!.rms > LOUD_RMS) loudAtMs.push(peer.heard[seen]!.atMs);
      return loudAtMs;
    },
    bytes: () =>
      relay
        ? {
            up: relay.counts.toServerBytes,
            down: relay.counts.toClientBytes,
            upPackets: relay.counts.toServerPackets,
            downPackets: relay.counts.toClientPackets,
          }
        : { up: 0, down: 0 },
    close: async () => {
      peer.sendJson({ label: 'rtvi-ai', type: 'disconnect-bot' });
      await sleep(300);
      await peer.close();
      await relay?.close();
    },
  } as Participant;
}

/** Every participant's next frame, every 20 ms on the wall clock. */
function startClock(participants: Participant[]): { stop(): void; lateFrames: () => number } {
  const startMs = performance.now();
  let ticks = 0;
  let late = 0;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const due = Math.floor((performance.now() - startMs) / FRAME_MS) + 1;
    // A tick this process was too busy to make is skipped, not caught up: a burst of frames is
    // what the server's flood limit ends a participant for, and no microphone sends one.
    if (due - ticks > 1) {
      late += due - ticks - 1;
      ticks = due - 1;
    }
    while (ticks < due) {
      ticks++;
      for (const p of participants) {
        const queued = p.queue.shift();
        if (queued) {
          p.sendFrame(queued.frame);
          queued.onSent?.();
        } else if (p.looping) {
          p.sendFrame(p.loop[p.loopAt]!);
          p.loopAt = (p.loopAt + 1) % p.loop.length;
        } else p.sendFrame(p.silence);
      }
    }
    timer = setTimeout(tick, Math.max(0, startMs + ticks * FRAME_MS - performance.now()));
  };
  tick();
  return { stop: () => clearTimeout(timer), lateFrames: () => late };
}

function cpuSecs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime, fields 14 and 15 of the whole line, in clock ticks.
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSec();
}

let ticksPerSec: number | undefined;
function clockTicksPerSec(): number {
  if (ticksPerSec === undefined) {
    try {
      ticksPerSec = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      ticksPerSec = 100;
    }
  }
  return ticksPerSec;
}

async function serverCpuPct(pid: number, windowSecs: number): Promise<number> {
  const cpu0 = cpuSecs(pid);
  const t0 = performance.now();
  await sleep(windowSecs * 1000);
  return ((cpuSecs(pid) - cpu0) / ((performance.now() - t0) / 1000)) * 100;
}

interface LoadRow {
  transport: Transport;
  rooms: number;
  serverCpuPct: number;
  cpuPerParticipantPct: number;
  upKbps: number;
  downKbps: number;
  upPacketsPerSec?: number;
  downPacketsPerSec?: number;
  lateClientFrames: number;
  loadAverage: string;
}

async function loadStep(
  server: ServerProcess,
  mic: Microphone,
  transport: Transport,
  rooms: number,
  idleCpuPct: number,
): Promise<LoadRow> {
  const participants: Participant[] = [];
  const clock = startClock(participants);
  try {
    const pending = Array.from(
      { length: rooms },
      () => () => join(server, transport, mic, { measureLatency: false, countBytes: true }),
    );
    let refused = 0;
    while (pending.length > 0) {
      const joined = await Promise.allSettled(pending.splice(0, JOIN_CONCURRENCY).map((start) => start()));
      for (const outcome of joined) {
        if (outcome.status === 'fulfilled') participants.push(outcome.value);
        else {
          refused += 1;
          process.stdout.write(`  a ${transport} participant could not join: ${String(outcome.reason)}\n`);
        }
      }
    }
    const joinedRooms = rooms - refused;
    await sleep(Number(args['warmup-s']) * 1000);
    const before = participants.map((p) => p.bytes());
    const lateBefore = clock.lateFrames();
    const t0 = performance.now();
    const cpuPct = await serverCpuPct(server.child.pid!, Number(args['window-s']));
    const secs = (performance.now() - t0) / 1000;
    const after = participants.map((p) => p.bytes());
    const sum = (pick: (b: ReturnType<Participant['bytes']>) => number | undefined) =>
      after.reduce((total, b, i) => total + ((pick(b) ?? 0) - (pick(before[i]!) ?? 0)), 0);
    const perRoom = (value: number) => value / joinedRooms / secs;
    return {
      transport,
      rooms: joinedRooms,
      serverCpuPct: round(cpuPct),
      cpuPerParticipantPct: round((cpuPct - idleCpuPct) / joinedRooms, 2),
      upKbps: round((perRoom(sum((b) => b.up)) * 8) / 1000),
      downKbps: round((perRoom(sum((b) => b.down)) * 8) / 1000),
      ...(transport === 'webrtc'
        ? {
            upPacketsPerSec: round(perRoom(sum((b) => b.upPackets))),
            downPacketsPerSec: round(perRoom(sum((b) => b.downPackets))),
          }
        : {}),
      lateClientFrames: clock.lateFrames() - lateBefore,
      loadAverage: loadavg()
        .map((l) => l.toFixed(2))
        .join(' '),
    };
  } finally {
    clock.stop();
    await Promise.all(participants.map((p) => p.close().catch(() => undefined)));
    await sleep(3000);
  }
}

/** A few rooms of each transport at once, each taking turns: question, wait for the reply, again. */
async function latencyPhase(
  server: ServerProcess,
  mic: Microphone,
  roomsEach: number,
  turns: number,
): Promise<Record<Transport, number[]>> {
  const participants: Participant[] = [];
  const clock = startClock(participants);
  const samples: Record<Transport, number[]> = { websocket: [], webrtc: [] };
  const discarded: Record<Transport, number> = { websocket: 0, webrtc: 0 };
  const failed: Record<Transport, number> = { websocket: 0, webrtc: 0 };
  try {
    for (const transport of ['websocket', 'webrtc'] as const)
      for (let i = 0; i < roomsEach; i++)
        participants.push(await join(server, transport, mic, { measureLatency: true, countBytes: false }));
    const stops = (p: Participant) => p.messages.filter((m) => m.type === 'bot-stopped-speaking').length;
    const userStops = (p: Participant) => p.messages.filter((m) => m.type === 'user-stopped-speaking').length;
    await Promise.all(
      participants.map(async (p) => {
        try {
          await takeTurns(p);
        } catch (err) {
          failed[p.transport] += 1;
          process.stdout.write(`  a ${p.transport} room gave up: ${(err as Error).message}\n`);
        }
      }),
    );
    async function takeTurns(p: Participant): Promise<void> {
      await until(() => stops(p) >= 1, 60_000);
      for (let turn = 0; turn < turns; turn++) {
        await sleep(800 + Math.random() * 400);
        const stopsBefore = stops(p);
        const userStopsBefore = userStops(p);
        let spokeAtMs = 0;
        let endedEarly = false;
        const frames = p.loop.slice(0, mic.questionFrames);
        p.queue.push(
          ...frames.map((frame, i) => ({
            frame,
            onSent:
              i === mic.lastVoicedFrame
                ? () => {
                    spokeAtMs = performance.now() + FRAME_MS;
                    // A pause within the question ended the turn already: that reply is not timed from here.
                    endedEarly = userStops(p) > userStopsBefore;
                  }
                : undefined,
          })),
        );
        await until(() => stops(p) > stopsBefore, 60_000);
        const onset = p.loudAtMs.find((at) => spokeAtMs > 0 && at > spokeAtMs);
        if (endedEarly) discarded[p.transport] += 1;
        else if (onset !== undefined) samples[p.transport].push(onset - spokeAtMs);
      }
    }
  } finally {
    clock.stop();
    await Promise.all(participants.map((p) => p.close().catch(() => undefined)));
    await sleep(3000);
  }
  if (discarded.websocket + discarded.webrtc > 0)
    process.stdout.write(
      `  turns not timed (a pause in the question ended the turn early): websocket ${discarded.websocket}, webrtc ${discarded.webrtc}\n`,
    );
  return samples;
}

async function main(): Promise<void> {
  const pinning = cpuPinning();
  process.stdout.write(`${pinning.describe}\n`);
  // The clients run here: on the load's cores, away from the server.
  if (pinning.load) execFileSync('taskset', ['-a', '-p', '-c', pinning.load, String(process.pid)], { stdio: 'ignore' });
  const emulators = await startEmulateProcess(benchEmulatorArgs(), pinning.load);
  const server = await startServerProcess(
    {
      SWITCHBOARD_DEEPGRAM_URL: emulators.url,
      SWITCHBOARD_OPENAI_URL: emulators.url,
      SWITCHBOARD_CARTESIA_URL: emulators.url,
      SWITCHBOARD_MAX_ROOMS: '200',
    },
    [],
    pinning.server,
  );
  const mic = microphone();
  const report: Record<string, unknown> = { loadAverageAtStart: loadavg() };
  try {
    // One room of each kind first, so the VAD model and the rest are loaded before anything is timed.
    await latencyPhase(server, mic, 1, 1);
    const idleCpuPct = await serverCpuPct(server.child.pid!, 5);
    process.stdout.write(
      `idle server: ${round(idleCpuPct)} % of a core; load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    const rows: LoadRow[] = [];
    for (const rooms of args.rooms.split(',').map(Number)) {
      for (const transport of ['websocket', 'webrtc'] as const) {
        process.stdout.write(`${rooms} ${transport} rooms...\n`);
        const row = await loadStep(server, mic, transport, rooms, idleCpuPct);
        rows.push(row);
        process.stdout.write(`  ${JSON.stringify(row)}\n`);
      }
    }
    process.stdout.write(
      `latency: ${args['latency-rooms']} rooms of each transport, ${args['latency-turns']} turns each...\n`,
    );
    const latency = await latencyPhase(server, mic, Number(args['latency-rooms']), Number(args['latency-turns']));
    const lat = (t: Transport) => ({
      samples: latency[t].length,
      p50: percentile(latency[t], 50),
      p95: percentile(latency[t], 95),
    });
    const latencyRows = { websocket: lat('websocket'), webrtc: lat('webrtc') };
    report.idleServerCpuPct = round(idleCpuPct);
    report.load = rows;
    report.replyLatencyMs = latencyRows;
    report.loadAverageAtEnd = loadavg();

    process.stdout.write(
      '\nWebRTC rooms against websocket rooms (server CPU in % of one core; bandwidth per participant)\n',
    );
    process.stdout.write(
      `${'rooms'.padEnd(6)}${'transport'.padEnd(11)}${'server CPU'.padStart(11)}${'per room'.padStart(10)}${'up kbit/s'.padStart(11)}${'down kbit/s'.padStart(13)}${'up/down pkt/s'.padStart(15)}${'late frames'.padStart(13)}  load average\n`,
    );
    for (const r of rows)
      process.stdout.write(
        `${String(r.rooms).padEnd(6)}${r.transport.padEnd(11)}${`${r.serverCpuPct} %`.padStart(11)}${`${r.cpuPerParticipantPct} %`.padStart(10)}${String(r.upKbps).padStart(11)}${String(r.downKbps).padStart(13)}${(r.upPacketsPerSec === undefined ? '' : `${r.upPacketsPerSec}/${r.downPacketsPerSec}`).padStart(15)}${String(r.lateClientFrames).padStart(13)}  ${r.loadAverage}\n`,
      );
    process.stdout.write(
      `\nreply latency (caller's last voiced frame sent -> bot's reply arriving loud), ms:\n` +
        `  websocket p50 ${latencyRows.websocket.p50?.toFixed(0)} p95 ${latencyRows.websocket.p95?.toFixed(0)} (${latencyRows.websocket.samples} turns)\n` +
        `  webrtc    p50 ${latencyRows.webrtc.p50?.toFixed(0)} p95 ${latencyRows.webrtc.p95?.toFixed(0)} (${latencyRows.webrtc.samples} turns)\n` +
        `  added by WebRTC at p50: ${((latencyRows.webrtc.p50 ?? 0) - (latencyRows.websocket.p50 ?? 0)).toFixed(0)} ms\n`,
    );
    writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`written to ${args.out}\n`);
  } finally {
    await server.stop();
    await emulators.stop();
  }
}

async function until(probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!probe()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms`);
    await sleep(50);
  }
}

function rmsOf(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length)) / 32768;
}

function round(value: number, digits = 1): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

await main();
// werift leaves sockets and timers of closed peers behind; the figures are out, so the script ends here.
process.exit(0);

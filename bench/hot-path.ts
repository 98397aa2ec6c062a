import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import pino from 'pino';
import type { WebSocket } from 'ws';
import { decodeMulaw } from '../src/audio/mulaw.js';
import { DEFAULT_VAD_PARAMS } from '../src/pipeline/bot-settings.js';
import type { CallVad } from '../src/vad/call-vad.js';
import { Playout, PlayoutClock } from '../src/pipeline/playout.js';
import { TwilioTransport } from '../src/telephony/twilio-transport.js';
import { createSileroCallVad } from '../src/vad/silero-call-vad.js';
import { warmSileroNetwork } from '../src/vad/silero-network.js';

/**
 * `npx tsx bench/hot-path.ts`: the per-frame work of N calls in one process, without sockets, and
 * what it does to the event loop. A script, not a test: it prints numbers and never fails.
 *
 * Each call is the real TwilioTransport (fed the carrier's JSON text, as ws hands it over) whose
 * media goes through mu-law decoding into the call's Silero VAD (createSileroCallVad, as calls use
 * it), while a Playout on the shared PlayoutClock streams a never-ending bot reply back out
 * through the same transport (base64 + JSON per frame). That is a call's whole per-frame path but
 * for the sockets themselves and the STT write, i.e. the worst case of caller and bot talking
 * at once all the time.
 *
 * Inbound frames are prebuilt message buffers emitted on a 5 ms timer (each call at its own
 * phase), so the generator costs one emit per frame. Printed per N: event-loop delay p50/p99/max,
 * the playout clock's tick lag p99/max (an outbound frame is late by at most that), CPU of the
 * whole process (every thread) per call and in all (ms per second; 1000 = one core), how busy the
 * main thread's event loop was (event-loop utilisation), and the share of inbound frames handled.
 */

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '50,100,200,300' },
    'duration-s': { type: 'string', default: '10' },
    'warmup-s': { type: 'string', default: '2' },
  },
});

const FRAME_MS = 20;
const FRAME_BYTES = 160;
const STREAM_SID = 'MZ00000000000000000000000000000000';
const FIXTURES = fileURLToPath(new URL('../fixtures/audio/', import.meta.url));
const CLIPS = ['A01_jfk', 'A07_go_forward', 'A10_noise_dishes', 'A09_noisy_speech_snr0'].map((name) =>
  readFileSync(`${FIXTURES}${name}.ulaw`),
);
/** The bot's voice: any speech clip, sent in 1 s chunks as a TTS stream would. */
const REPLY_AUDIO = readFileSync(`${FIXTURES}A06_birch_canoe.ulaw`);
const silentLog = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' });

/** The carrier's media messages of a clip, built once: the bench should measure the server, not itself. */
function mediaMessages(clip: Uint8Array): Buffer[] {
  const messages: Buffer[] = [];
  for (let at = 0, seq = 2; at + FRAME_BYTES <= clip.length; at += FRAME_BYTES, seq++) {
    const payload = Buffer.from(clip.subarray(at, at + FRAME_BYTES)).toString('base64');
    messages.push(
      Buffer.from(
        JSON.stringify({
          event: 'media',
          sequenceNumber: String(seq),
          streamSid: STREAM_SID,
          media: { track: 'inbound', chunk: String(seq - 1), timestamp: String((seq - 2) * FRAME_MS), payload },
        }),
      ),
    );
  }
  return messages;
}
const MESSAGES = CLIPS.map(mediaMessages);

/** Just enough of a ws WebSocket for TwilioTransport: always open, never backed up. */
class BenchSocket extends EventEmitter {
  readonly OPEN = 1;
  readonly CONNECTING = 0;
  readyState = 1;
  bufferedAmount = 0;
  bytesOut = 0;
  send(data: string): void {
    this.bytesOut += data.length;
  }
  close(): void {
    this.readyState = 3;
  }
}

interface BenchCall {
  socket: BenchSocket;
  transport: TwilioTransport;
  messages: Buffer[];
  sent: number;
  phaseMs: number;
  playout: Playout;
  generation: number;
  replyAt: number;
  vad: CallVad;
}

function startCall(index: number, clock: PlayoutClock): BenchCall {
  const socket = new BenchSocket();
  const transport = new TwilioTransport(socket as unknown as WebSocket, silentLog);
  const playout = new Playout(transport);
  const vad = createSileroCallVad(DEFAULT_VAD_PARAMS, { onSpeechStart() {}, onSpeechStop() {} }, silentLog);
  let pcm = new Int16Array(FRAME_BYTES);
  transport.attach({
    onStart() {},
    onAudio(mulaw) {
      // As CallSession.onAudio does: decode by table into the call's buffer, then the VAD.
      if (pcm.length !== mulaw.length) pcm = new Int16Array(mulaw.length);
      vad.push(decodeMulaw(mulaw, pcm));
    },
    onDtmf() {},
    onMark: (name) => playout.onMarkEchoed(name),
    onEnd() {},
  });
  const emit = (message: object) => socket.emit('message', Buffer.from(JSON.stringify(message)), false);
  emit({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  emit({
    event: 'start',
    sequenceNumber: '1',
    streamSid: STREAM_SID,
    start: { streamSid: STREAM_SID, callSid: `CA${index}`, tracks: ['inbound'], customParameters: {} },
  });
  clock.add(playout);
  return {
    socket,
    transport,
    messages: MESSAGES[index % MESSAGES.length]!,
    sent: 0,
    phaseMs: (index * 7) % FRAME_MS,
    playout,
    generation: playout.startReply(),
    replyAt: 0,
    vad,
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function run(n: number, durationMs: number, warmupMs: number) {
  const clock = new PlayoutClock();
  const tickLags: number[] = [];
  let measuring = false;
  clock.onTickLag = (lagMs) => {
    if (measuring) tickLags.push(lagMs);
  };
  const calls = Array.from({ length: n }, (_, i) => startCall(i, clock));
  const startedAt = performance.now();
  const mediaIn = () => calls.reduce((sum, call) => sum + call.transport.stats.mediaIn, 0);

  // The caller's side: each call's frames at 50 per second from its own phase, caught up if late.
  const feeder = setInterval(() => {
    const elapsedMs = performance.now() - startedAt;
    for (const call of calls) {
      const due = Math.floor((elapsedMs - call.phaseMs) / FRAME_MS);
      while (call.sent < due) {
        call.socket.emit('message', call.messages[call.sent % call.messages.length], false);
        call.sent++;
      }
      // The bot's side: a second of reply audio every second, a new reply every 10 s.
      const second = Math.floor(elapsedMs / 1000);
      if (second >= call.replyAt) {
        if (second % 10 === 9) call.generation = call.playout.startReply();
        const at = (second * 8000) % (REPLY_AUDIO.length - 8000);
        call.playout.enqueue(call.generation, REPLY_AUDIO.subarray(at, at + 8000));
        call.replyAt = second + 1;
      }
    }
  }, 5);

  await new Promise((resolve) => setTimeout(resolve, warmupMs));
  // The same 10 ms resolution as /metrics (prom-client), so the figures read the same way: an idle
  // loop shows about 10 ms, since the histogram records the whole interval between its ticks.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  measuring = true;
  const mediaInBefore = mediaIn();
  const cpuBefore = process.cpuUsage();
  const eluBefore = performance.eventLoopUtilization();
  const wallBefore = performance.now();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  const cpu = process.cpuUsage(cpuBefore);
  const mainBusy = performance.eventLoopUtilization(eluBefore).utilization;
  const wallMs = performance.now() - wallBefore;
  measuring = false;
  const framesIn = mediaIn() - mediaInBefore;
  loopDelay.disable();
  clearInterval(feeder);
  for (const call of calls) {
    clock.delete(call.playout);
    call.vad.dispose();
  }
  // Let VAD runs still in flight finish before the next N starts.
  await new Promise((resolve) => setTimeout(resolve, 300));

  const cpuMsPerSec = (cpu.user + cpu.system) / 1000 / (wallMs / 1000);
  tickLags.sort((a, b) => a - b);
  return {
    n,
    loopP50Ms: loopDelay.percentile(50) / 1e6,
    loopP99Ms: loopDelay.percentile(99) / 1e6,
    loopMaxMs: loopDelay.max / 1e6,
    tickLagP99Ms: percentile(tickLags, 99),
    tickLagMaxMs: tickLags.at(-1) ?? 0,
    cpuMsPerSec,
    cpuPerCallMsPerSec: cpuMsPerSec / n,
    mainBusy,
    framesInShare: framesIn / ((n * wallMs) / FRAME_MS),
  };
}

async function main(): Promise<void> {
  await warmSileroNetwork();
  const durationMs = Number(args['duration-s']) * 1000;
  const warmupMs = Number(args['warmup-s']) * 1000;
  console.log(
    `hot path, ${durationMs / 1000} s per point after ${warmupMs / 1000} s warm-up; cpu in ms per second (1000 = one core)`,
  );
  console.log(
    'calls  loop p50  loop p99  loop max  tick-lag p99  tick-lag max  cpu/call  cpu total  main busy  frames in',
  );
  for (const n of args.calls.split(',').map(Number)) {
    const r = await run(n, durationMs, warmupMs);
    const ms = (v: number) => v.toFixed(2).padStart(8);
    console.log(
      `${String(n).padStart(5)} ${ms(r.loopP50Ms)}  ${ms(r.loopP99Ms)}  ${ms(r.loopMaxMs)}  ${ms(r.tickLagP99Ms).padStart(12)}  ` +
        `${ms(r.tickLagMaxMs).padStart(12)}  ${ms(r.cpuPerCallMsPerSec)}  ${r.cpuMsPerSec.toFixed(0).padStart(9)}  ` +
        `${(r.mainBusy * 100).toFixed(1).padStart(8)}%  ` +
        `${(r.framesInShare * 100).toFixed(1).padStart(8)}%`,
    );
  }
  process.exit(0);
}

await main();

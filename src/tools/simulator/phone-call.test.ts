import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { MULAW_SILENCE_BYTE } from '../../audio/frames.js';
import { decodeMulaw, encodeMulaw } from '../../audio/mulaw.js';
import { resample } from '../../audio/resample.js';
import { encodePcm16Wav, parseWav } from '../../audio/wav.js';
import { callSucceeded, runCall, scenarioFromFlags } from '../../cli/call.js';
import { buildStreamTwiml } from '../../telephony/twiml.js';
import {
  connectedMessage,
  dtmfMessage,
  markMessage,
  mediaMessage,
  startMessage,
  stopMessage,
} from '../../telephony/twilio-messages.js';
import { isValidTwilioSignature } from '../../telephony/twilio-signature.js';
import type { CallerClip } from './caller-clip.js';
import { readMulawFile, sliceMulaw } from './clip-file.js';
import { PhoneCall, runPhoneCall } from './phone-call.js';
import type { Scenario } from './scenario.js';

// ---------------------------------------------------------------------------------------------
// A fake bot: a ws server playing the server side of Twilio Media Streams, scripted per test.
// ---------------------------------------------------------------------------------------------

const SILENCE_PAYLOAD = Buffer.alloc(160, MULAW_SILENCE_BYTE).toString('base64');

interface Received {
  atMs: number;
  json: Record<string, unknown> & { event: string };
}

/** One call leg as the bot sees it. */
class FakeLeg {
  readonly received: Received[] = [];
  streamSid = '';
  readonly closed: Promise<{ code: number; reason: string; atMs: number }>;
  /** Arrival times of the caller's first non-silent frame and of the first silent frame after it. */
  voiceStartMs: number | null = null;
  voiceEndMs: number | null = null;
  private started: () => void = () => {};
  readonly startReceived = new Promise<void>((resolve) => (this.started = resolve));
  onVoiceStart: () => void = () => {};
  onVoiceEnd: () => void = () => {};

  constructor(readonly ws: WebSocket) {
    this.closed = new Promise((resolve) =>
      ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), atMs: performance.now() })),
    );
    ws.on('message', (data) => {
      const json = JSON.parse(data.toString()) as Received['json'];
      const atMs = performance.now();
      this.received.push({ atMs, json });
      if (json.event === 'start') {
        this.streamSid = (json as unknown as { streamSid: string }).streamSid;
        this.started();
      } else if (json.event === 'media') {
        const silent = (json as unknown as { media: { payload: string } }).media.payload === SILENCE_PAYLOAD;
        if (!silent && this.voiceStartMs === null) {
          this.voiceStartMs = atMs;
          this.onVoiceStart();
        } else if (silent && this.voiceStartMs !== null && this.voiceEndMs === null) {
          this.voiceEndMs = atMs;
          this.onVoiceEnd();
        }
      }
    });
  }

  /** Sends audio as 160-byte media messages, all at once (the carrier buffers it). */
  sendAudio(mulaw: Uint8Array, chunkBytes = 160): void {
    for (let i = 0; i < mulaw.length; i += chunkBytes) {
      const payload = Buffer.from(mulaw.subarray(i, i + chunkBytes)).toString('base64');
      this.ws.send(JSON.stringify({ event: 'media', streamSid: this.streamSid, media: { payload } }));
    }
  }

  sendMark(name: string): void {
    this.ws.send(JSON.stringify({ event: 'mark', streamSid: this.streamSid, mark: { name } }));
  }

  sendClear(): void {
    this.ws.send(JSON.stringify({ event: 'clear', streamSid: this.streamSid }));
  }

  events(name: string): Received[] {
    return this.received.filter((r) => r.json.event === name);
  }

  /** Resolves when a mark with this name comes back. */
  markEcho(name: string): Promise<number> {
    return new Promise((resolve) => {
      const check = () => {
        const hit = this.received.find(
          (r) => r.json.event === 'mark' && (r.json.mark as { name: string }).name === name,
        );
        if (hit) resolve(hit.atMs);
        else setTimeout(check, 2);
      };
      check();
    });
  }
}

interface FakeBot {
  url: string;
  legs: FakeLeg[];
  close(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function startFakeBot(
  onLeg: (leg: FakeLeg) => void,
  verifyClient?: (headers: Record<string, unknown>) => boolean,
): Promise<FakeBot> {
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    verifyClient: verifyClient
      ? (info: { req: { headers: Record<string, unknown> } }) => verifyClient(info.req.headers)
      : undefined,
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  const legs: FakeLeg[] = [];
  wss.on('connection', (ws) => {
    const leg = new FakeLeg(ws);
    legs.push(leg);
    onLeg(leg);
  });
  const port = (wss.address() as AddressInfo).port;
  const bot: FakeBot = {
    url: `ws://127.0.0.1:${port}/ws/twilio/cfg_test`,
    legs,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => resolve());
      }),
  };
  cleanups.push(bot.close);
  return bot;
}

/** A 440 Hz tone: unmistakably voiced, with a known length. */
function tone(ms: number, amplitude = 8000): Uint8Array {
  const pcm = new Int16Array(ms * 8);
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(amplitude * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return encodeMulaw(pcm);
}

/** Duration of the 20 ms frames in a recording that carry the tone. */
function loudMs(pcm: Int16Array): number {
  let frames = 0;
  for (let f = 0; f + 160 <= pcm.length; f += 160) {
    let peak = 0;
    for (let i = f; i < f + 160; i++) peak = Math.max(peak, Math.abs(pcm[i]!));
    if (peak > 2000) frames += 1;
  }
  return frames * 20;
}

function toneClip(ms: number): CallerClip {
  return { mulaw: tone(ms), voiced: { startMs: 0, endMs: ms } };
}

function callTo(bot: FakeBot, scenario: Scenario, extra: Partial<ConstructorParameters<typeof PhoneCall>[0]> = {}) {
  return new PhoneCall({ target: { wssUrl: bot.url }, scenario, ...extra });
}

// ---------------------------------------------------------------------------------------------

describe('PhoneCall against a fake bot', () => {
  it('opens with connected and start, streams paced media, and hangs up with stop and close', async () => {
    const bot = await startFakeBot(() => {});
    const call = callTo(bot, { steps: [{ do: 'wait', ms: 1000 }] }, { customParameters: { who: 'test' } });
    const report = await call.run();
    const leg = bot.legs[0]!;
    const closed = await leg.closed;

    const [connected, start, ...rest] = leg.received;
    expect(connectedMessage.strict().parse(connected!.json)).toEqual({
      event: 'connected',
      protocol: 'Call',
      version: '1.0.0',
    });
    const s = startMessage.parse(start!.json);
    expect(s).toMatchObject({
      sequenceNumber: '1',
      streamSid: call.streamSid,
      start: {
        streamSid: call.streamSid,
        callSid: call.callSid,
        accountSid: call.accountSid,
        tracks: ['inbound'],
        customParameters: { who: 'test' },
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    expect(call.callSid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(call.streamSid).toMatch(/^MZ[0-9a-f]{32}$/);

    const media = rest.filter((r) => r.json.event === 'media');
    const stop = rest[rest.length - 1]!;
    expect(media.length).toBe(rest.length - 1);
    media.forEach((r, i) => {
      const m = mediaMessage.parse(r.json);
      expect(m.sequenceNumber).toBe(String(i + 2));
      expect(m.media).toEqual({
        track: 'inbound',
        chunk: String(i + 1),
        timestamp: String(i * 20),
        payload: SILENCE_PAYLOAD,
      });
      expect(m.streamSid).toBe(call.streamSid);
    });
    expect(stopMessage.parse(stop.json)).toEqual({
      event: 'stop',
      sequenceNumber: String(media.length + 2),
      streamSid: call.streamSid,
      stop: { accountSid: call.accountSid, callSid: call.callSid },
    });

    // Real-time pacing: at least the second's 50 frames, and never faster than one per 20 ms (a
    // busy machine may deliver them late, so there is no upper bound here).
    expect(media.length).toBeGreaterThanOrEqual(48);
    const spanMs = media[media.length - 1]!.atMs - media[0]!.atMs;
    expect(spanMs).toBeGreaterThan((media.length - 1) * 20 - 40);

    expect(closed.code).toBe(1000);
    expect(report).toMatchObject({
      outcome: 'completed',
      endReason: 'end of script',
      close: { code: 1000, by: 'caller' },
    });
    expect(report.metrics.caller.framesSent).toBe(media.length);
    expect(report.metrics.violations.total).toBe(0);
    expect(report.timeline.map((e) => e.kind)).toEqual([
      'ws-open',
      'connected-sent',
      'start-sent',
      'hangup',
      'stop-sent',
      'socket-closed',
    ]);
  });

  it('echoes a mark only after the audio before it has played, and at once when idle', async () => {
    let sentAt = 0;
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => {
        leg.sendMark('idle');
        leg.sendAudio(tone(300));
        leg.sendMark('after-300');
        sentAt = performance.now();
      });
    });
    const report = await runPhoneCall({ target: { wssUrl: bot.url }, scenario: { steps: [{ do: 'wait', ms: 700 }] } });
    const leg = bot.legs[0]!;
    const marks = leg.events('mark').map((r) => markMessage.parse(r.json));
    expect(marks.map((m) => m.mark.name)).toEqual(['idle', 'after-300']);
    expect(marks.every((m) => m.streamSid === leg.streamSid && /^\d+$/.test(m.sequenceNumber!))).toBe(true);
    await leg.markEcho('idle');
    const playedEcho = await leg.markEcho('after-300');
    // Idle: echoed before the tone sent after it starts playing. Queued: not before the tone played.
    // (How soon is the benchmark's business: bench/latency.ts.)
    const at = (kind: string, detail?: string) =>
      report.timeline.find((e) => e.kind === kind && (detail === undefined || e.detail === detail))!.atMs;
    expect(at('mark-echoed', 'idle')).toBeLessThanOrEqual(at('bot-audio-start'));
    expect(at('mark-echoed', 'after-300')).toBeGreaterThanOrEqual(at('bot-audio-end'));
    expect(playedEcho - sentAt).toBeGreaterThanOrEqual(290);
    expect(report.metrics.marks).toEqual({ received: 2, echoed: 2 });
    expect(report.metrics.bot).toMatchObject({ segments: 1, receivedAudioMs: 300, playedAudioMs: 300, underruns: 0 });
    expect(report.metrics.firstBotAudioMs).toBe(at('bot-audio-start'));
  });

  it('clear drops queued audio, echoes pending marks at once, and audio after it is reported late', async () => {
    let clearAt = 0;
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => {
        leg.sendAudio(tone(2000));
        leg.sendMark('a');
        leg.sendMark('b');
        setTimeout(() => {
          leg.sendClear();
          clearAt = performance.now();
          setTimeout(() => leg.sendAudio(tone(200)), 100);
        }, 300);
      });
    });
    const call = callTo(bot, { steps: [{ do: 'wait', ms: 800 }] }, { record: true });
    const report = await call.run();
    const leg = bot.legs[0]!;
    const [a, b] = [await leg.markEcho('a'), await leg.markEcho('b')];
    expect(a).toBeGreaterThanOrEqual(clearAt);
    expect(b).toBeGreaterThanOrEqual(clearAt);
    // At once: on the clear itself, before the audio sent after it starts playing (not after the
    // 2 s the queue held).
    const clearedAt = report.timeline.find((e) => e.kind === 'clear-received')!.atMs;
    const echoes = report.timeline.filter((e) => e.kind === 'mark-echoed');
    const lateStart = report.timeline.filter((e) => e.kind === 'bot-audio-start')[1]!.atMs;
    expect(echoes.map((e) => e.detail)).toEqual(['a', 'b']);
    for (const echo of echoes) {
      expect(echo.atMs).toBeGreaterThanOrEqual(clearedAt);
      expect(echo.atMs).toBeLessThanOrEqual(lateStart);
    }

    const [clear] = report.metrics.clears;
    expect(report.metrics.clears).toHaveLength(1);
    expect(clear!.droppedAudioMs).toBeGreaterThan(0);
    expect(clear!.lateAudioMs).toBe(200);
    expect(clear!.lastLateAudioAfterMs).toBeGreaterThanOrEqual(90);
    // Every millisecond sent either played or was dropped by the clear: no gaps, no repeats. The
    // 20 ms frame playing when the clear came counts in both (it started, and was cut).
    expect(report.metrics.bot.playedAudioMs + clear!.droppedAudioMs).toBe(2200 + 20);
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(400);
    expect(report.metrics.bot.segments).toBe(2);
    // What had played of the first segment when the clear came: all that played but the 200 ms after it.
    expect(clear!.playedAudioMs).toBe(report.metrics.bot.playedAudioMs - 200);
    expect(report.timeline.some((e) => e.kind === 'clear-received')).toBe(true);
    // Audio again soon after a clear shows on the timeline as the bot resuming.
    expect(clear!.resumedAfterMs).toBeGreaterThanOrEqual(90);
    expect(report.timeline.filter((e) => e.kind === 'bot-audio-start').at(-1)!.detail).toMatch(
      /^resumed \d+ ms after the clear$/,
    );

    // The recording holds only what played: the dropped audio never reaches the WAV.
    expect(loudMs(decodeMulaw(call.recording!.botMulaw()))).toBe(report.metrics.bot.playedAudioMs);
  });

  it('barges in relative to the start of bot audio, and measures barge-in and reply latency', async () => {
    let greetingAt = 0;
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() =>
        setTimeout(() => {
          greetingAt = performance.now();
          leg.sendAudio(tone(3000));
        }, 200),
      );
      // An instant-VAD bot: clear on the caller's first voiced frame, reply 150 ms after it stops.
      leg.onVoiceStart = () => leg.sendClear();
      leg.onVoiceEnd = () => setTimeout(() => leg.sendAudio(tone(300)), 150);
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.url },
      scenario: {
        steps: [
          { do: 'wait-bot-audio', thenMs: 400 },
          { do: 'play', clip: 'interrupt' },
          { do: 'wait-bot-silence', ms: 200 },
        ],
      },
      clips: { interrupt: toneClip(400) },
    });
    const leg = bot.legs[0]!;
    const bargeInAfterMs = leg.voiceStartMs! - greetingAt;
    expect(bargeInAfterMs).toBeGreaterThanOrEqual(380);

    expect(report.outcome).toBe('completed');
    const [u] = report.metrics.utterances;
    expect(u).toMatchObject({ clip: 'interrupt', bargeIn: true });
    // The bot clears on the caller's first voiced frame: the latency is measured from there to the
    // clear, which comes while the caller is still speaking.
    const at = (kind: string) => report.timeline.find((e) => e.kind === kind)!.atMs;
    // Each figure is rounded to the millisecond on its own, so the difference may differ by one.
    expect(Math.abs(u!.bargeInLatencyMs! - (at('clear-received') - u!.firstVoicedMs!))).toBeLessThanOrEqual(1);
    expect(at('clear-received')).toBeGreaterThanOrEqual(at('caller-voice-start'));
    expect(at('clear-received')).toBeLessThanOrEqual(at('caller-voice-end'));
    expect(u!.replyLatencyMs).toBeGreaterThanOrEqual(150);
    expect(report.metrics.replyLatenciesMs).toEqual([u!.replyLatencyMs]);
    // The voice spans the clip's voiced frames, 19 ticks apart. These are the ticks' wall times,
    // which a loaded machine's late ticks bunch together (334 ms once), so only their order is
    // checked; the frames sent between them are the clip's, played to its end.
    expect(u!.lastVoicedMs!).toBeGreaterThan(u!.firstVoicedMs!);
    expect(u!.endMs).toBeGreaterThanOrEqual(u!.lastVoicedMs!);
    const kinds = report.timeline.map((e) => e.kind);
    expect(kinds.indexOf('caller-voice-start')).toBeGreaterThan(kinds.indexOf('bot-audio-start'));
  });

  it('waits for the greeting to end before speaking, and sends DTMF in the carrier shape', async () => {
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => leg.sendAudio(tone(400)));
    });
    const report = await runPhoneCall({
      target: { wssUrl: bot.url },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 300 },
          { do: 'dtmf', digits: '1#' },
          { do: 'wait', ms: 60 },
        ],
      },
    });
    const leg = bot.legs[0]!;
    const dtmf = leg.events('dtmf').map((r) => dtmfMessage.strict().parse(r.json));
    expect(dtmf.map((d) => d.dtmf)).toEqual([
      { track: 'inbound_track', digit: '1' },
      { track: 'inbound_track', digit: '#' },
    ]);
    expect(dtmf[0]!.streamSid).toBe(leg.streamSid);
    expect(Number(dtmf[1]!.sequenceNumber)).toBe(Number(dtmf[0]!.sequenceNumber) + 1);
    const greetingEnd = report.timeline.find((e) => e.kind === 'bot-audio-end')!.atMs;
    const dtmfAt = report.timeline.find((e) => e.kind === 'dtmf-sent')!.atMs;
    expect(dtmfAt - greetingEnd).toBeGreaterThanOrEqual(300);
    expect(report.metrics.caller.dtmfSent).toBe(2);
  });

  it('reports underruns when the bot pauses mid-reply, and records a WAV on the call timeline', async () => {
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => {
        leg.sendAudio(tone(200));
        setTimeout(() => leg.sendAudio(tone(200), 100), 400);
      });
    });
    const call = callTo(bot, { steps: [{ do: 'wait', ms: 1000 }] }, { record: true });
    const report = await call.run();
    expect(report.metrics.bot).toMatchObject({ segments: 1, underruns: 1, playedAudioMs: 400 });
    expect(report.metrics.bot.longestUnderrunMs).toBeGreaterThanOrEqual(160);

    const wav = parseWav(call.recording!.botWav());
    expect(wav).toMatchObject({ sampleRateHz: 8000, channels: 1 });
    // One 20 ms frame per tick: the WAV lasts as long as the caller streamed.
    expect(wav.samples.length).toBe(report.metrics.caller.framesSent * 160);
    expect(wav.samples.length / 8).toBeGreaterThanOrEqual(980);
    expect(loudMs(wav.samples)).toBe(400);
    const stereo = parseWav(call.recording!.stereoWav());
    expect(stereo).toMatchObject({ sampleRateHz: 8000, channels: 2 });
    expect(stereo.samples.length).toBe(wav.samples.length * 2);
  });

  it('counts protocol violations and ignores the offending messages', async () => {
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => {
        leg.ws.send(Buffer.from([1, 2, 3]), { binary: true });
        leg.ws.send(`{"event":"hangup","streamSid":"${leg.streamSid}"}`);
        leg.ws.send('not json');
        leg.ws.send(JSON.stringify({ event: 'media', streamSid: 'MZwrong', media: { payload: SILENCE_PAYLOAD } }));
        leg.ws.send(
          JSON.stringify({
            event: 'media',
            streamSid: leg.streamSid,
            media: { payload: SILENCE_PAYLOAD },
            track: 'outbound',
          }),
        );
        leg.ws.send(JSON.stringify({ event: 'mark', streamSid: leg.streamSid }));
        leg.ws.send(JSON.stringify({ event: 'media', streamSid: leg.streamSid, media: { payload: '@@@@' } }));
      });
    });
    const report = await runPhoneCall({ target: { wssUrl: bot.url }, scenario: { steps: [{ do: 'wait', ms: 200 }] } });
    expect(report.metrics.violations.byKind).toEqual({
      'binary-frame': 1,
      'unknown-event': 1,
      'invalid-json': 1,
      'wrong-stream-sid': 1,
      'invalid-message': 2,
      'invalid-base64': 1,
    });
    expect(report.metrics.violations.total).toBe(7);
    expect(report.metrics.violations.samples[1]).toMatchObject({ kind: 'unknown-event', detail: 'hangup' });
    expect(report.metrics.bot.receivedAudioMs).toBe(0);
    expect(report.outcome).toBe('completed');
    expect(callSucceeded(report)).toBe(false);
  });

  it('records the close code when the server ends the call', async () => {
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => leg.ws.close(4404, 'unknown bot configuration'));
    });
    const report = await runPhoneCall({ target: { wssUrl: bot.url }, scenario: { steps: [{ do: 'wait', ms: 5000 }] } });
    expect(report).toMatchObject({
      outcome: 'server-closed',
      close: { code: 4404, reason: 'unknown bot configuration', by: 'server' },
    });
    // Ended by the server's close, not by the script's 5 s wait.
    expect(report.endReason).not.toBe('end of script');
    expect(report.durationMs).toBeLessThan(5000);
    expect(callSucceeded(report)).toBe(false);
  });

  it('reports a refused connection as connect-failed', async () => {
    const bot = await startFakeBot(() => {});
    const url = bot.url;
    await bot.close();
    const report = await runPhoneCall({ target: { wssUrl: url }, scenario: { steps: [] } });
    expect(report.outcome).toBe('connect-failed');
    expect(report.close).toBeNull();
    expect(report.endReason).toMatch(/ECONNREFUSED/);
  });

  it('hangs up when aborted', async () => {
    const bot = await startFakeBot(() => {});
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 200);
    const report = await runPhoneCall({
      target: { wssUrl: bot.url },
      scenario: { steps: [], endOfScript: 'stay' },
      signal: abort.signal,
    });
    expect(report.outcome).toBe('aborted');
    expect(bot.legs[0]!.events('stop')).toHaveLength(1);
  });
});

describe('PhoneCall through a TwiML webhook', () => {
  async function startWebhook(
    handler: (form: URLSearchParams, signature: string | undefined, url: string) => { status: number; body: string },
  ): Promise<string> {
    const server: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const port = (server.address() as AddressInfo).port;
        const signature = req.headers['x-twilio-signature'];
        const answer = handler(
          new URLSearchParams(body),
          typeof signature === 'string' ? signature : undefined,
          `http://127.0.0.1:${port}${req.url}`,
        );
        res.writeHead(answer.status, { 'content-type': 'text/xml' }).end(answer.body);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/twilio/voice/cfg_test`;
  }

  it('posts the carrier form, signs it, dials the Stream url and passes the Parameters on', async () => {
    const token = 'test-auth-token';
    let upgradeSigned = false;
    const bot = await startFakeBot(
      () => {},
      (headers) => {
        const signature = headers['x-twilio-signature'];
        upgradeSigned = isValidTwilioSignature(
          token,
          typeof signature === 'string' ? signature : undefined,
          bot.url,
          {},
        );
        return true;
      },
    );
    let form: URLSearchParams | undefined;
    let webhookSigned = false;
    const webhookUrl = await startWebhook((posted, signature, url) => {
      form = posted;
      webhookSigned = isValidTwilioSignature(token, signature, url, Object.fromEntries(posted));
      const twiml = buildStreamTwiml({
        streamUrl: bot.url,
        parameters: { bot_id: 'cfg_test', from: posted.get('From') ?? '', note: 'a&b' },
      });
      return { status: 200, body: twiml };
    });
    const call = new PhoneCall({
      target: { webhookUrl },
      scenario: { steps: [{ do: 'wait', ms: 100 }] },
      from: '+15550001111',
      to: '+15550002222',
      customParameters: { extra: 'yes', note: 'overridden' },
      authToken: token,
    });
    const report = await call.run();

    expect(Object.fromEntries(form!)).toMatchObject({
      CallSid: call.callSid,
      AccountSid: call.accountSid,
      From: '+15550001111',
      To: '+15550002222',
      CallStatus: 'ringing',
      Direction: 'inbound',
    });
    expect(webhookSigned).toBe(true);
    expect(upgradeSigned).toBe(true);
    const start = startMessage.parse(bot.legs[0]!.events('start')[0]!.json);
    expect(start.start.customParameters).toEqual({
      bot_id: 'cfg_test',
      from: '+15550001111',
      note: 'overridden',
      extra: 'yes',
    });
    expect(report.wssUrl).toBe(bot.url);
    expect(report.setup.webhookMs).not.toBeNull();
    expect(report.timeline[0]).toMatchObject({ kind: 'webhook-answered' });
    expect(report.timeline[0]!.atMs).toBeLessThan(0);
    expect(report.outcome).toBe('completed');
  });

  it('a webhook that answers without a stream fails the call with what it said', async () => {
    const webhookUrl = await startWebhook(() => ({
      status: 404,
      body: '<?xml version="1.0"?><Response><Say>This bot is not available.</Say><Hangup/></Response>',
    }));
    const report = await runPhoneCall({ target: { webhookUrl }, scenario: { steps: [] } });
    expect(report.outcome).toBe('connect-failed');
    expect(report.endReason).toContain('HTTP 404');
    expect(report.endReason).toContain('This bot is not available.');
    expect(report.wssUrl).toBeNull();
  });
});

describe('switchboard call (CLI)', () => {
  it('plays a resampled WAV after the greeting, prints a timeline and summary, writes WAV and JSON', async () => {
    const bot = await startFakeBot((leg) => {
      void leg.startReceived.then(() => {
        leg.sendAudio(tone(300));
        leg.sendMark('greeting');
      });
      leg.onVoiceEnd = () =>
        setTimeout(() => {
          leg.sendAudio(tone(300));
          leg.sendMark('reply');
        }, 200);
    });
    const dir = await mkdtemp(join(tmpdir(), 'switchboard-call-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // 0.8 s of JFK, upsampled to 16 kHz so the CLI has to resample it back.
    const jfk = await readMulawFile(new URL('../../../fixtures/audio/A01_jfk.ulaw', import.meta.url).pathname);
    const slice = decodeMulaw(sliceMulaw(jfk, 1000, 800));
    const wavPath = join(dir, 'jfk16k.wav');
    await writeFile(wavPath, encodePcm16Wav(resample(slice, 8000, 16000), 16000));

    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
    const out = join(dir, 'bot.wav');
    const json = join(dir, 'report.json');
    const code = await runCall(
      [
        '--wss',
        bot.url,
        '--wait-greeting',
        '--reply-silence-ms',
        '300',
        '--play',
        wavPath,
        '--dtmf',
        '5',
        '--out',
        out,
        '--json',
        json,
        '--param',
        'k=v',
      ],
      io,
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toMatch(/0 ms {2}start-sent/);
    expect(stdout).toContain('caller-audio-start  jfk16k');
    expect(stdout).not.toContain('mark-echoed');
    expect(stdout).toMatch(/reply latency: \d+ ms/);
    expect(stdout).toContain('protocol violations: none');

    const report = JSON.parse(await readFile(json, 'utf8'));
    expect(report.outcome).toBe('completed');
    expect(report.customParameters).toEqual({ k: 'v' });
    expect(report.metrics.marks).toEqual({ received: 2, echoed: 2 });
    expect(report.metrics.utterances).toHaveLength(1);
    expect(report.metrics.utterances[0].replyLatencyMs).toBeGreaterThanOrEqual(150);
    expect(report.metrics.caller.dtmfSent).toBe(1);
    const wav = parseWav(new Uint8Array(await readFile(out)));
    expect(wav.samples.length).toBe(report.metrics.caller.framesSent * 160);
  });

  it('turns the flags into a scenario: greeting wait, clips after each reply, barge-in on the last', () => {
    const scenario = scenarioFromFlags({
      plays: ['a/q.wav', 'b/q.ulaw', 'stop.ulaw'],
      bargeInMs: 600,
      dtmf: '9',
      waitGreeting: true,
      replySilenceMs: 800,
      hangupAfterMs: undefined,
    });
    expect(scenario.steps).toEqual([
      { do: 'wait-bot-silence', ms: 800 },
      { do: 'play', clip: 'q' },
      { do: 'wait-bot-silence', ms: 800 },
      { do: 'play', clip: 'q#2' },
      { do: 'wait-bot-audio', thenMs: 600 },
      { do: 'play', clip: 'stop' },
      { do: 'dtmf', digits: '9' },
      { do: 'wait-bot-silence', ms: 800 },
    ]);
    expect(scenario.clips).toEqual({
      q: { file: 'a/q.wav' },
      'q#2': { file: 'b/q.ulaw' },
      stop: { file: 'stop.ulaw' },
    });
    expect(scenario.endOfScript).toBe('hangup');
  });

  it('rejects bad options with status 2 and documents every flag in --help', async () => {
    let stdout = '';
    let stderr = '';
    const io = { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } };
    expect(await runCall(['--play', 'x.wav'], io)).toBe(2);
    expect(stderr).toContain('exactly one of --url and --wss');
    expect(await runCall(['--wss', 'ws://x', '--barge-in-ms', 'soon', '--play', 'a.wav'], io)).toBe(2);
    expect(await runCall(['--bogus'], io)).toBe(2);
    expect(await runCall(['--help'], io)).toBe(0);
    for (const flag of [
      '--url',
      '--wss',
      '--play',
      '--barge-in-ms',
      '--dtmf',
      '--hangup-after-ms',
      '--wait-greeting',
      '--out',
      '--json',
      '--from',
      '--to',
    ]) {
      expect(stdout).toContain(flag);
    }
  });
});

import jpeg from 'jpeg-js';
import { afterEach, describe, expect, it } from 'vitest';
import { keyframeToJpeg } from '../../src/rooms/webrtc/camera-worker-client.js';
import { type ImpairedLink, startImpairedLink } from '../helpers/udp-impairment.js';
import {
  ANSWER,
  CHROMIUM,
  GREETING,
  HEARD,
  keepToLocalhost,
  LONG_REPLY,
  SKIP_NOTE,
  scriptedStartBody,
  scriptedSuite,
  sdk,
  startBot,
  TONE_MS_PER_CHAR,
  untilEvent as untilSdkEvent,
  type WebRtcSdkEvent,
  watchedPage,
} from './pipecat-harness.js';

/**
 * Pipecat's own client SDK and SmallWebRTC transport in headless Chromium, against a real server
 * (WebRTC room: werift, Opus both ways; Silero VAD, turn-taking; scripted STT/LLM/TTS). The page
 * is bundled from the installed packages with esbuild and served from its own localhost origin.
 * Chromium's fake microphone plays a fixture: quiet through the greeting, a question, then the
 * same words again over the bot's long answer, which interrupts it. The page meters the bot's
 * track as it arrives, so the checks are on the audio as heard. Skipped where no Chromium is installed.
 */

const untilEvent = untilSdkEvent<WebRtcSdkEvent>;

const START_BODY = scriptedStartBody('webrtc');

describe.skipIf(!CHROMIUM)(`the Pipecat client SDK over SmallWebRTC in headless Chromium${SKIP_NOTE}`, () => {
  const suite = scriptedSuite({
    page: './pipecat-webrtc-page.ts',
    title: 'Pipecat WebRTC',
    quiet: { leadSecs: 6, gapSecs: 3, tailSecs: 10 },
  });
  let link: ImpairedLink | undefined;

  afterEach(async () => {
    await link?.close();
    link = undefined;
  });

  /** A server, a front-end, and a page that has called startBotAndConnect; `impair` puts media through a lossy relay. */
  async function call(
    impair?: { lossRate: number; jitterMs: number },
    options: { camera?: boolean; body?: Record<string, unknown> } = {},
  ) {
    const { frontOrigin, origin, stt, llm } = await suite.start();
    const { page, consoleErrors } = await watchedPage(suite.browser());
    if (impair) {
      link = await startImpairedLink(impair);
      const relay = link;
      // Media goes through the relay: the answer names the relay instead of the server's
      // sockets, and the browser's own candidates never reach the server (its checks would
      // find the direct path).
      await page.route('**/rooms/*/offer*', async (route) => {
        if (route.request().method() === 'PATCH') {
          await route.fulfill({
            status: 200,
            contentType: 'application/json',
            body: '{"status":"success","added":0}',
          });
          return;
        }
        if (route.request().method() !== 'POST') return route.continue();
        const response = await route.fetch();
        const answer = (await response.json()) as { sdp?: unknown };
        // A refusal (a restart offer after the room has closed: 404) goes to the SDK as it came.
        if (!response.ok() || typeof answer.sdp !== 'string') return route.fulfill({ response });
        answer.sdp = relay.rewriteAnswer(answer.sdp);
        await route.fulfill({ response, json: answer });
      });
    }
    const elsewhere = await keepToLocalhost(page);
    await page.goto(`${frontOrigin}/${options.camera ? '#camera' : ''}`);
    const { outcome, answer } = await startBot(page, `${origin}/v1/bots/start`, options.body ?? START_BODY);
    return { page, stt, llm, outcome, answer, consoleErrors, elsewhere };
  }

  it('startBotAndConnect joins over WebRTC; the greeting is heard; the question is answered; a barge-in stops the bot; disconnectBot ends the room', async () => {
    const { page, stt, llm, outcome, answer, elsewhere } = await call();
    expect(outcome).toBe('connected');
    expect(Object.keys(answer).sort()).toEqual(['iceConfig', 'webrtcRequestParams']);
    expect(answer.webrtcRequestParams.endpoint).toMatch(/^http:\/\/localhost:\d+\/rooms\/[\w-]+\/offer\?token=v1\./);

    // The greeting: spoken, and heard in the browser as Opus over RTP, in full.
    let events = await untilEvent(page, 'the greeting', (e) => e.some((x) => x.type === 'botStoppedSpeaking'));
    expect(events.filter((e) => e.type === 'botReady')).toHaveLength(1);
    await expect
      .poll(() => sdk<number>(page, 't.heardMs()'), { timeout: 10_000 })
      .toBeGreaterThan(GREETING.length * TONE_MS_PER_CHAR * 0.85);
    if (process.env.SDK_DEBUG) console.log('greeting heard, ms:', await sdk<number>(page, 't.heardMs()'));

    // The question, heard from the microphone over RTP: the user's transcript, then the long answer.
    events = await untilEvent(
      page,
      'the user transcript',
      (e) => e.some((x) => x.type === 'userTranscript' && x.data!.final === true),
      30_000,
    );
    expect(events.find((e) => e.type === 'userTranscript' && e.data!.final)!.data).toMatchObject({
      text: HEARD,
      final: true,
    });
    // The greeting was one reply, played once: one start and one stop before the caller spoke.
    // (How long the browser played it says nothing more: it stretches audio around late packets,
    // more so on a loaded machine.)
    const beforeQuestion = events.slice(
      0,
      events.findIndex((e) => e.type === 'userStartedSpeaking'),
    );
    expect(beforeQuestion.filter((e) => e.type === 'botStartedSpeaking')).toHaveLength(1);
    expect(beforeQuestion.filter((e) => e.type === 'botStoppedSpeaking')).toHaveLength(1);

    // The same words over the long answer interrupt it: little of it is heard, and once the
    // bot has stopped, the browser plays out what its jitter buffer held and then nothing.
    events = await untilEvent(
      page,
      'the interruption',
      (e) => e.filter((x) => x.type === 'botStoppedSpeaking').length >= 2,
      30_000,
    );
    const longStart = events.filter((e) => e.type === 'botStartedSpeaking')[1]!;
    const firstStop = events.filter((e) => e.type === 'botStoppedSpeaking')[1]!;
    const between = events.slice(events.indexOf(longStart), events.indexOf(firstStop)).map((e) => e.type);
    expect(between).toContain('userStartedSpeaking');

    // The answer: its text, and its audio playing (the text may come first).
    events = await untilEvent(
      page,
      'the answer',
      (e) =>
        e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER) &&
        e.filter((x) => x.type === 'botStartedSpeaking' || x.type === 'botStoppedSpeaking').at(-1)?.type ===
          'botStartedSpeaking',
      30_000,
    );
    // The cut: the last stop before the answer starts (a suspected interruption may pause and
    // resume the reply before the one that ends it).
    const answerStart = events.filter((e) => e.type === 'botStartedSpeaking').at(-1)!;
    const cut = events.filter((e) => e.type === 'botStoppedSpeaking' && e.atMs < answerStart.atMs).at(-1)!;
    const blocks = await sdk<Array<{ atMs: number; rms: number }>>(page, 't.blocks');
    const loud = (b: { rms: number }) => b.rms > 0.01;
    const afterCut = blocks.filter((b) => b.atMs > cut.atMs && b.atMs < answerStart.atMs);
    const lastLoudMs = Math.max(0, ...afterCut.filter(loud).map((b) => b.atMs - cut.atMs));
    if (process.env.SDK_DEBUG)
      console.log(
        'bot audio after the cut: last loud block at +ms',
        Math.round(lastLoudMs),
        events.filter((e) => e.atMs > longStart.atMs).map((e) => `${e.type}@${Math.round(e.atMs - cut.atMs)}`),
      );
    // Silent from shortly after the cut until the answer: nothing of the cut reply kept playing.
    expect(afterCut.length).toBeGreaterThan(20);
    expect(afterCut.filter((b) => b.atMs - cut.atMs > 400).some(loud)).toBe(false);
    const longHeardMs = blocks.filter((b) => b.atMs > longStart.atMs && b.atMs <= cut.atMs && loud(b)).length * 10;
    expect(longHeardMs).toBeGreaterThan(0);
    // Cut in the middle: the server kept in the context only the part of the long answer the
    // caller heard before the barge-in, a beginning of it and not the whole.
    const contextOfAnswer = llm.requests[2]!.messages;
    expect(contextOfAnswer.at(-1)).toEqual({ role: 'user', content: HEARD });
    const heardOfLong = contextOfAnswer.at(-2) as { role: string; content: string };
    expect(heardOfLong.role).toBe('assistant');
    expect(heardOfLong.content.length).toBeGreaterThan(0);
    expect(heardOfLong.content.length).toBeLessThan(LONG_REPLY.length);
    expect(LONG_REPLY.startsWith(heardOfLong.content.replace(/…$/, '').trimEnd())).toBe(true);

    // disconnectBot: the bot leaves and the room ends; the offer URL is refused from then on.
    await sdk(page, 't.disconnectBot()');
    await expect.poll(() => stt.closed, { timeout: 10_000 }).toBe(1);
    await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
    const late = await fetch(answer.webrtcRequestParams.endpoint.replace('localhost', '127.0.0.1'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sdp: 'v=0\r\n', type: 'offer', pc_id: null, restart_pc: false }),
    });
    expect(late.status).toBe(404);
    expect(await late.json()).toEqual({ error: 'not-found', info: 'room not found or has closed' });
    expect(elsewhere).toEqual([]);
    await page.close();
  }, 120_000);

  it('a vision profile sees the camera: VP8 from the fake camera reaches the LLM as a JPEG picture with the user turn', async () => {
    // The picture worker runs here from TypeScript, which takes a loaded machine seconds to
    // compile: started before the call, as a server's built worker is ready at once.
    await keyframeToJpeg(new Uint8Array(16));
    const { page, llm, outcome } = await call(undefined, {
      camera: true,
      body: { ...START_BODY, bot_profile: 'vision_2024_10' },
    });
    expect(outcome).toBe('connected');
    await untilEvent(
      page,
      'the user transcript',
      (e) => e.some((x) => x.type === 'userTranscript' && x.data!.final === true),
      30_000,
    );
    await expect.poll(() => llm.requests.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(2);
    const lastUser = llm.requests[1]!.messages.at(-1)!;
    expect(lastUser).toMatchObject({ role: 'user', content: HEARD });
    // A JPEG (base64 of FF D8 FF) of the camera's picture: its size, and a picture rather than a flat plane.
    expect(lastUser.imageBase64).toMatch(/^\/9j\//);
    const picture = jpeg.decode(Buffer.from(lastUser.imageBase64!, 'base64'), { useTArray: true });
    expect([picture.width, picture.height]).toEqual([640, 480]);
    const luma = Array.from({ length: picture.width * picture.height }, (_, i) => picture.data[i * 4 + 1]!);
    const mean = luma.reduce((a, b) => a + b, 0) / luma.length;
    const spread = Math.sqrt(luma.reduce((a, b) => a + (b - mean) ** 2, 0) / luma.length);
    if (process.env.SDK_DEBUG) console.log('camera picture: mean', mean, 'spread', spread);
    expect(spread).toBeGreaterThan(10);
    await sdk(page, 't.disconnectBot()');
    await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
    await page.close();
  }, 120_000);

  it('through a link that loses 5 % of packets with 40 ms of jitter, the call completes and the bot is heard intact', async () => {
    const { page, outcome } = await call({ lossRate: 0.05, jitterMs: 40 });
    expect(outcome).toBe('connected');
    // The greeting, heard through the loss: as long as spoken, give or take the concealed frames.
    await untilEvent(page, 'the greeting', (e) => e.some((x) => x.type === 'botStoppedSpeaking'), 30_000);
    await expect
      .poll(() => sdk<number>(page, 't.heardMs()'), { timeout: 10_000 })
      .toBeGreaterThan(GREETING.length * TONE_MS_PER_CHAR * 0.85);
    // The question crossed the lossy link too: transcribed, answered.
    const events = await untilEvent(
      page,
      'the user transcript',
      (e) => e.some((x) => x.type === 'userTranscript' && x.data!.final === true),
      30_000,
    );
    expect(events.find((e) => e.type === 'userTranscript' && e.data!.final)!.data).toMatchObject({ text: HEARD });
    const withReply = await untilEvent(
      page,
      'the long reply',
      (e) => e.filter((x) => x.type === 'botStartedSpeaking').length >= 2,
    );
    const replyStartMs = withReply.filter((e) => e.type === 'botStartedSpeaking')[1]!.atMs;
    // The reply's audio as received, its first second from when it is first heard: continuous
    // (no dropout a listener would hear), though 1 packet in 20 was lost and many came out of order.
    await page.waitForTimeout(1800);
    const blocks = await sdk<Array<{ atMs: number; rms: number }>>(page, 't.blocks');
    const firstLoudMs = blocks.find((b) => b.atMs > replyStartMs && b.rms > 0.01)!.atMs;
    const reply = blocks.filter((b) => b.atMs >= firstLoudMs && b.atMs < firstLoudMs + 1000);
    const quiet = reply.filter((b) => b.rms < 0.01).length;
    if (process.env.SDK_DEBUG)
      console.log(
        'link',
        link!.stats,
        'reply blocks',
        reply.length,
        'quiet',
        quiet,
        reply.map((b) => (b.rms < 0.01 ? '_' : '#')).join(''),
      );
    expect(link!.stats.dropped).toBeGreaterThan(0);
    expect(reply.length).toBeGreaterThan(80);
    expect(quiet).toBeLessThanOrEqual(5);
    await sdk(page, 't.disconnectBot()');
    await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
    await page.close();
  }, 120_000);
});

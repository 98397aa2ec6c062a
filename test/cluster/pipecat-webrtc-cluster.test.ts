/**
 * Pipecat's own client SDK and SmallWebRTC transport in headless Chromium, against two
 * `switchboard serve` nodes on one PostgreSQL and one Redis. The front-end knows only the
 * cluster's public address (a round-robin balancer): the balancer sends `POST /v1/bots/start` to
 * node A, which opens the room, and every request under `/rooms/` (the SDP offer, the ICE
 * candidate PATCHes) to node B, which passes them to A; the media then flows between the browser
 * and A directly. Vendors are the emulators (tone TTS, scripted transcripts). Skipped where no
 * Chromium, PostgreSQL or Redis is installed.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SPEECH_MS_PER_CHAR } from '../../src/tools/emulators/emulator-kit.js';
import {
  bundlePage,
  CHROMIUM,
  keepToLocalhost,
  launchWithMicrophone,
  SKIP_NOTE,
  sdk,
  serveFrontEnd,
  startBot,
  untilEvent as untilSdkEvent,
  type WebRtcSdkEvent,
  watchedPage,
} from '../browser/pipecat-harness.js';
import { sampleConfig } from '../helpers/test-data.js';
import { ANSWER, type Cluster, clusterView, GREETING, redisLookup, startCluster, until } from './cluster-harness.js';

const untilEvent = untilSdkEvent<WebRtcSdkEvent>;

const START_BODY = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  api_keys: sampleConfig().api_keys,
  config: [
    { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.5 } }] },
    {
      service: 'llm',
      options: [
        { name: 'initial_messages', value: [{ role: 'system', content: 'You are a friendly receptionist.' }] },
        { name: 'run_on_config', value: true },
      ],
    },
  ],
  max_duration: 120,
  transport: 'webrtc',
};

const skipNote = SKIP_NOTE || (redisLookup.ok ? '' : ` (skipped: ${redisLookup.reason})`);

describe.skipIf(!CHROMIUM || !redisLookup.ok)(
  `the Pipecat client SDK over SmallWebRTC in headless Chromium, through a cluster${skipNote}`,
  { timeout: 180_000 },
  () => {
    let browser: Browser | undefined;
    let cluster: Cluster | undefined;
    let closeFront: (() => Promise<void>) | undefined;
    let bundle: string;
    let frontOrigin: string;

    beforeAll(async () => {
      bundle = await bundlePage('./pipecat-webrtc-page.ts');
      const front = await serveFrontEnd(bundle, 'Pipecat WebRTC through a cluster');
      closeFront = front.close;
      frontOrigin = front.origin;
      cluster = await startCluster({ SWITCHBOARD_CORS_ORIGINS: front.origin });
      // Quiet through the greeting (4.2 s of speech), the question, then quiet well past the answer.
      browser = await launchWithMicrophone({ leadSecs: 10, gapSecs: 15, tailSecs: 5 });
    }, 90_000);

    afterAll(async () => {
      if (process.env.CLUSTER_TEST_OUTPUT) for (const node of cluster?.nodes ?? []) console.log(node.output());
      await browser?.close();
      await cluster?.close();
      await closeFront?.();
    });

    it('startBotAndConnect through the balancer: the room opens on node A, its offer and candidates reach node B, which passes them on; the greeting is heard, the question answered, and disconnectBot ends the room', async () => {
      const c = cluster!;
      const [a, b] = c.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
      c.proxy.pinPaths('/v1/bots/start', 0);
      c.proxy.pinPaths('/rooms/', 1);
      const roomsOn = async (node: { baseUrl: string }) =>
        (await clusterView(node.baseUrl)).nodes.find((n) => n.url === node.baseUrl)?.rooms ?? 0;

      const { page } = await watchedPage(browser!);
      const elsewhere = await keepToLocalhost(page);
      await page.goto(`${frontOrigin}/`);
      const { outcome, answer: started } = await startBot(page, `${c.proxy.url}/v1/bots/start`, START_BODY);
      expect(outcome).toBe('connected');
      // The offer URL names the cluster's one public address, not a node's own.
      const offerUrl = new URL(started.webrtcRequestParams.endpoint);
      expect(offerUrl.origin).toBe(c.proxy.url);
      const name = offerUrl.pathname.split('/')[2]!;

      // The room is A's; the client's offer and candidates all went to B.
      await until(async () => (await roomsOn(a)) === 1);
      expect(await roomsOn(b)).toBe(0);
      const routed = (prefix: string) => c.proxy.routed.filter((r) => r.path.startsWith(prefix));
      expect(routed('/v1/bots/start').filter((r) => r.method === 'POST')).toEqual([
        { index: 0, method: 'POST', path: '/v1/bots/start' },
      ]);
      const signalling = routed(`/rooms/${name}/offer`).filter((r) => r.method !== 'OPTIONS');
      expect(signalling.filter((r) => r.method === 'POST').length).toBeGreaterThanOrEqual(1);
      expect(signalling.filter((r) => r.method === 'PATCH').length).toBeGreaterThanOrEqual(1);
      expect(signalling.every((r) => r.index === 1)).toBe(true);

      // The greeting: spoken on A, heard in the browser as Opus over RTP, in full.
      let events = await untilEvent(
        page,
        'the greeting',
        (e) => e.some((x) => x.type === 'botStoppedSpeaking'),
        30_000,
      );
      expect(events.filter((e) => e.type === 'botReady')).toHaveLength(1);
      await expect
        .poll(() => sdk<number>(page, 't.heardMs()'), { timeout: 10_000 })
        .toBeGreaterThan(GREETING.length * SPEECH_MS_PER_CHAR * 0.85);

      // The question, from the microphone over RTP to A: transcribed, and the answer heard.
      events = await untilEvent(
        page,
        'the user transcript',
        (e) => e.some((x) => x.type === 'userTranscript' && x.data!.final === true),
        30_000,
      );
      const heardBeforeAnswer = await sdk<number>(page, 't.heardMs()');
      events = await untilEvent(
        page,
        'the answer',
        (e) =>
          e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER) &&
          e.filter((x) => x.type === 'botStoppedSpeaking').length >= 2,
        30_000,
      );
      await expect
        .poll(() => sdk<number>(page, 't.heardMs()'), { timeout: 10_000 })
        .toBeGreaterThan(heardBeforeAnswer + ANSWER.length * SPEECH_MS_PER_CHAR * 0.85);

      // disconnectBot: the room on A ends, and an offer through B is told so.
      await sdk(page, 't.disconnectBot()');
      await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
      await until(async () => (await roomsOn(a)) === 0);
      const late = await fetch(`${b.baseUrl}${offerUrl.pathname}${offerUrl.search}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sdp: 'v=0\r\n', type: 'offer', pc_id: null, restart_pc: false }),
      });
      expect(late.status).toBe(404);
      expect(elsewhere).toEqual([]);
      await page.close();
    });
  },
);

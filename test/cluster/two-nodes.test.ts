/**
 * Two `switchboard serve` processes on one PostgreSQL and one Redis, behind one address (a
 * round-robin proxy), behave as one service: whichever node a request lands on, configurations,
 * dial-in callers, rooms and recordings are found, and the limits count the whole cluster.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import type { TimelineEvent } from '../../src/tools/simulator/call-report.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { RoomClient, fixturePcm } from '../helpers/room-client.js';
import { sampleConfig } from '../helpers/test-data.js';
import { encodeMicrophone, WebRtcRoomPeer } from '../helpers/webrtc-room-peer.js';
import { type Cluster, clusterView, redisLookup, startCluster, until } from './cluster-harness.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const START_BODY = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  api_keys: sampleConfig().api_keys,
  config: [
    {
      service: 'llm',
      options: [
        { name: 'initial_messages', value: [{ role: 'system', content: 'You are a friendly receptionist.' }] },
        { name: 'run_on_config', value: true },
      ],
    },
  ],
  max_duration: 120,
};

/** Timeline events as they happen; `next` resolves with the first of a kind. */
function eventWaiter() {
  const seen: TimelineEvent[] = [];
  const waiters: Array<{ kind: TimelineEvent['kind']; resolve: (e: TimelineEvent) => void }> = [];
  return {
    onEvent(event: TimelineEvent) {
      seen.push(event);
      for (const w of waiters.filter((w) => w.kind === event.kind)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(event);
      }
    },
    next(kind: TimelineEvent['kind']): Promise<TimelineEvent> {
      const found = seen.find((e) => e.kind === kind);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ kind, resolve }));
    },
  };
}

const roomName = (roomUrl: string) => roomUrl.split('/rooms/')[1]!;

/** The first JSON log line of a node's output that `match` accepts, once it has been written. */
async function logLine(
  output: () => string,
  match: (line: Record<string, any>) => boolean,
): Promise<Record<string, any>> {
  let found: Record<string, any> | undefined;
  await until(() => {
    for (const text of output().split('\n')) {
      if (!text.startsWith('{')) continue;
      const line = JSON.parse(text) as Record<string, any>;
      if (match(line)) {
        found = line;
        return true;
      }
    }
    return false;
  });
  return found!;
}
const wsOf = (baseUrl: string) => baseUrl.replace(/^http/, 'ws');

describe.skipIf(!redisLookup.ok)('two nodes behind one address', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '30' });
  }, 60_000);
  afterAll(async () => {
    if (process.env.CLUSTER_TEST_OUTPUT) for (const node of cluster?.nodes ?? []) console.log(node.output());
    await cluster?.close();
  });

  it('a configuration created on one node answers a call that reaches the other', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const created = await cluster.api('POST', '/v1/bots/twilio-config', sampleConfig(), a.baseUrl);
    expect(created.status).toBe(200);
    const events = eventWaiter();
    const call = new PhoneCall({
      target: { webhookUrl: `${b.baseUrl}/twilio/voice/${created.body.id}` },
      // The TwiML names the public address; the carrier's stream reaches node B through it.
      beforeMediaStream: async () => cluster.proxy.pinNext(1),
      scenario: { steps: [{ do: 'wait-bot-silence', ms: 600 }, { do: 'hangup' }], endOfScript: 'hangup' },
      onEvent: (e) => events.onEvent(e),
    });
    const report = await call.run();
    expect(report.outcome).toBe('completed');
    expect(report.metrics.bot.receivedAudioMs).toBeGreaterThan(1000);
    expect(cluster.proxy.routed.at(-1)).toMatchObject({ index: 1, path: `/ws/twilio/${created.body.id}` });
  });

  it('a dial-in caller whose webhook and audio reach one node is put in the room a bot was started for on the other', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const number = '+14155550161';
    const secret = Buffer.alloc(32, 7).toString('base64');
    let started: Promise<{ status: number; body: any }> | undefined;
    // The customer's server starts the bot through node B.
    const receiver = await startWebhookReceiver(
      (to) => (to === number ? secret : undefined),
      200,
      (webhook) => {
        if (webhook.body.callId === undefined) return;
        started = cluster.api(
          'POST',
          '/v1/bots/start',
          { ...START_BODY, dialin_settings: { callId: webhook.body.callId, callDomain: webhook.body.callDomain } },
          b.baseUrl,
        );
      },
    );
    try {
      expect((await cluster.api('POST', '/v1/buy-phone-number', { number })).status).toBe(200);
      const configured = await cluster.api('POST', '/v1/', {
        properties: { pinless_dialin: [{ phone_number: number, room_creation_api: receiver.url, hmac: secret }] },
      });
      expect(configured.status).toBe(200);

      const contextsBefore = cluster.cartesia.contexts.length;
      const call = new PhoneCall({
        target: { webhookUrl: `${a.baseUrl}/twilio/voice` },
        to: number,
        // The carrier connects the audio once the bot has been started; its stream lands on A too.
        beforeMediaStream: async () => {
          await until(() => started !== undefined);
          await started;
          cluster.proxy.pinNext(0);
        },
        scenario: {
          steps: [{ do: 'wait', ms: 500 }, { do: 'wait-bot-silence', ms: 600 }, { do: 'hangup' }],
          endOfScript: 'hangup',
        },
      });
      const running = call.run();
      await until(() => started !== undefined);
      const answer = await started!;
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body.room_url).toMatch(new RegExp(`^${cluster.proxy.url}/rooms/[A-Za-z0-9_-]+$`));
      // The room is on A, where the caller is: A's view counts it.
      await until(async () => (await clusterView(b.baseUrl)).nodes.find((n) => n.url === a.baseUrl)?.rooms === 1);
      const report = await running;
      expect(report.outcome).toBe('completed');
      // The bot greeted the caller: its voice was synthesized for this call.
      expect(cluster.cartesia.contexts.length).toBeGreaterThan(contextsBefore);
    } finally {
      await receiver.close();
    }
  });

  it('a dial-in caller’s audio that reaches the other node than its webhook is relayed to the caller’s node', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const number = '+14155550162';
    const secret = Buffer.alloc(32, 8).toString('base64');
    let callId: string | undefined;
    const receiver = await startWebhookReceiver(
      (to) => (to === number ? secret : undefined),
      200,
      (webhook) => {
        if (webhook.body.callId !== undefined) callId = String(webhook.body.callId);
      },
    );
    try {
      expect((await cluster.api('POST', '/v1/buy-phone-number', { number })).status).toBe(200);
      expect(
        (
          await cluster.api('POST', '/v1/', {
            properties: { pinless_dialin: [{ phone_number: number, room_creation_api: receiver.url, hmac: secret }] },
          })
        ).status,
      ).toBe(200);
      const events = eventWaiter();
      const call = new PhoneCall({
        target: { webhookUrl: `${a.baseUrl}/twilio/voice` },
        to: number,
        beforeMediaStream: async () => cluster.proxy.pinNext(1),
        scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
        onEvent: (e) => events.onEvent(e),
      });
      const running = call.run();
      // The hold chime comes from A, through B.
      await events.next('bot-audio-start');
      expect(cluster.proxy.routed.at(-1)).toMatchObject({ index: 1, path: `/ws/dialin/${callId}` });
      const contextsBefore = cluster.cartesia.contexts.length;
      const answer = await cluster.api(
        'POST',
        '/v1/bots/start',
        { ...START_BODY, dialin_settings: { callId, callDomain: undefined } },
        b.baseUrl,
      );
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      await until(() => cluster.cartesia.contexts.length > contextsBefore);
      call.hangup();
      expect((await running).outcome).toBe('completed');
    } finally {
      await receiver.close();
    }
  });

  it('a browser participant joins a room through the node that does not hold it, and talks to the bot', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const started = await cluster.api('POST', '/v1/bots/start', START_BODY, a.baseUrl);
    expect(started.status).toBe(200);
    const name = roomName(started.body.room_url);
    // The page is served by either node.
    expect((await fetch(`${b.baseUrl}/rooms/${name}`)).status).toBe(200);
    expect((await fetch(`${b.baseUrl}/rooms/no-such-room`)).status).toBe(404);

    const client = await RoomClient.connect(`${wsOf(b.baseUrl)}/rooms/${name}/ws`, started.body.token);
    await client.until('bot-ready', () => client.of('bot-ready').length > 0);
    await client.until('the greeting', () => client.of('bot-stopped-speaking').length > 0 && client.audioBytes > 0);
    const pcm = fixturePcm('A06_birch_canoe.8k.wav', 16000);
    await client.stream(pcm);
    await client.stream(client.silence(1200));
    await client.until(
      'the answer',
      () => client.of('bot-transcription').length >= 2 || client.of('bot-llm-text').length >= 2,
      30_000,
    );
    expect(client.of('user-transcription').length).toBeGreaterThan(0);
    // A token of another room is refused where it lands, before any relay.
    const wrong = await RoomClient.connect(`${wsOf(b.baseUrl)}/rooms/another-room/ws`, started.body.token, {
      ready: false,
    });
    expect((await wrong.untilClosed()).code).toBe(4403);
    client.sendJson({ label: 'rtvi-ai', type: 'disconnect-bot' });
    await client.untilClosed(10_000);
  });

  it('a WebRTC participant whose offer, candidates and restart reach the node that does not hold the room connects to the one that does, and talks to the bot', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const started = await cluster.api('POST', '/v1/bots/start', { ...START_BODY, transport: 'webrtc' }, a.baseUrl);
    expect(started.status).toBe(200);
    // The offer URL is on the cluster's public address; this client's requests all land on the other node.
    const offerUrl = new URL(started.body.webrtcRequestParams.endpoint);
    const name = offerUrl.pathname.split('/')[2]!;
    const viaB = `${b.baseUrl}${offerUrl.pathname}${offerUrl.search}`;
    const roomsOn = async (node: { baseUrl: string }) => {
      const view = await clusterView(node.baseUrl);
      return view.nodes.find((n) => n.url === node.baseUrl)?.rooms ?? 0;
    };
    // The room is node a's (the cluster view counts rooms as each node's heartbeat reports them).
    await until(async () => (await roomsOn(a)) > 0);

    // Candidates trickled by PATCH, as Pipecat's client sends them: taken by the node holding the peer.
    const peer = await WebRtcRoomPeer.connect({ endpoint: viaB, candidates: 'patch', decode: true });
    try {
      expect(peer.pcId).toMatch(/^[\w-]{16}$/);
      expect(peer.patchedCandidates).toBeGreaterThan(0);
      await peer.until('bot-ready', () => peer.of('bot-ready').length > 0);
      const silence = encodeMicrophone(new Int16Array(960))[0]!;
      const mic = peer.startMicrophone(silence);
      await peer.until('the greeting, heard', () => peer.of('bot-stopped-speaking').length > 0, 30_000);
      expect(peer.heard.filter((p) => p.rms > 0.01).length).toBeGreaterThan(10);

      await mic.say(encodeMicrophone(fixturePcm('A06_birch_canoe.8k.wav', 48000)));
      await peer.until(
        'the answer',
        () => peer.of('bot-transcription').length >= 2 || peer.of('bot-llm-text').length >= 2,
        30_000,
      );
      expect(peer.of('user-transcription').length).toBeGreaterThan(0);

      // A network change: a new connection under the same pc_id, again through the other node.
      const heardBefore = peer.audioIn.packets;
      await peer.restart(viaB);
      await mic.say(encodeMicrophone(fixturePcm('A06_birch_canoe.8k.wav', 48000)));
      await peer.until(
        'the next answer, heard over the new connection',
        () => peer.of('user-transcription').length >= 2 && peer.audioIn.packets > heardBefore + 10,
        30_000,
      );
      // A room the token is not for is refused where the offer lands, before any relay.
      const wrong = await fetch(viaB.replace(`/rooms/${name}/`, '/rooms/another-room/'), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sdp: 'v=0\r\n', type: 'offer', pc_id: null, restart_pc: false }),
      });
      expect(wrong.status).toBe(403);
      peer.sendJson({ label: 'rtvi-ai', type: 'disconnect-bot' });
      await peer.until('the room ending', () => peer.ended, 15_000);
      mic.stop();
      // The room has ended on its node: an offer through the other node is told so.
      await until(async () => {
        const late = await fetch(viaB, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ sdp: 'v=0\r\n', type: 'offer', pc_id: null, restart_pc: false }),
        });
        return late.status === 404;
      });
    } finally {
      await peer.close();
    }
  });

  it('a recording made on one node is downloaded and deleted through the other', async () => {
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const created = await cluster.api(
      'POST',
      '/v1/bots/twilio-config',
      sampleConfig({ recording_settings: { type: 'cloud' } }),
      a.baseUrl,
    );
    const question = { mulaw: await readMulawFile(fixture('A06_birch_canoe.8k.wav')) };
    const report = await new PhoneCall({
      target: { webhookUrl: `${a.baseUrl}/twilio/voice/${created.body.id}` },
      beforeMediaStream: async () => cluster.proxy.pinNext(0),
      scenario: {
        steps: [{ do: 'wait-bot-silence', ms: 600 }, { do: 'play', clip: 'question' }, { do: 'hangup' }],
        endOfScript: 'hangup',
      },
      clips: { question },
    }).run();
    expect(report.outcome).toBe('completed');
    let recording: { id: string; status: string } | undefined;
    await until(async () => {
      // The only recorded call of this cluster: the newest recording.
      const listed = await cluster.api('GET', '/v1/recordings?limit=1', undefined, b.baseUrl);
      recording = listed.body.data[0];
      return recording?.status === 'finished';
    });
    const link = await cluster.api('GET', `/v1/recordings/${recording!.id}/access-link`, undefined, b.baseUrl);
    expect(link.status).toBe(200);
    // The link names the public address; here it is fetched from B, which does not have the file.
    const path = String(link.body.download_link).replace(cluster.proxy.url, '');
    const download = await fetch(`${b.baseUrl}${path}`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('audio/wav');
    const wav = Buffer.from(await download.arrayBuffer());
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.length).toBeGreaterThan(8000);

    const deleted = await cluster.api('DELETE', `/v1/recordings/${recording!.id}`, undefined, b.baseUrl);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect((await fetch(`${a.baseUrl}${path}`)).status).toBe(404);
  });

  it('a dial-out leg placed by one node joins its room there when every carrier callback and its audio reach the other', async () => {
    const [a] = cluster.nodes as [Cluster['nodes'][0]];
    const from = await cluster.api('POST', '/v1/buy-phone-number', { number: '+12125550163' });
    expect(from.status).toBe(200);
    // The sandbox carrier (in node A, which places the call) calls the public address; the
    // balancer sends its status callbacks, answer webhook and media stream all to node B.
    cluster.proxy.pinPaths('/twilio/dialout/', 1);
    cluster.proxy.pinPaths('/ws/dialout/', 1);
    const callee = '+14155550124';
    const started = await cluster.api(
      'POST',
      '/v1/bots/start',
      { ...START_BODY, dialout_settings: [{ phoneNumber: callee, callerId: from.body.id }] },
      a.baseUrl,
    );
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const room = roomName(started.body.room_url);

    // The callee (simulated in A's process, where the carrier is) hangs up once its call is over:
    // it heard the bot and answered it, in the room on A.
    const hungUp = await logLine(a.output, (l) => l.msg === 'sandbox callee hung up' && l.to === callee);
    expect(hungUp).toMatchObject({ outcome: 'completed' });
    expect(hungUp.botAudioMs).toBeGreaterThan(1000);
    expect(hungUp.calleeTurns).toBeGreaterThan(0);
    await logLine(a.output, (l) => l.msg === 'phone leg connected' && l.room === room && l.who === callee);
    // Its status callbacks, all through B, told A how the leg ended.
    await logLine(a.output, (l) => l.msg === 'dial-out call completed' && l.room === room);

    const legPaths = cluster.proxy.routed.filter((r) => r.path.includes('/dialout/'));
    const legId = /\/dialout\/([0-9a-f-]{36})/.exec(legPaths[0]!.path)![1];
    expect(legPaths.map((r) => `${r.index} ${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        `1 POST /twilio/dialout/${legId}/status`,
        `1 POST /twilio/dialout/${legId}`,
        `1 GET /ws/dialout/${legId}`,
      ]),
    );
    expect(legPaths.every((r) => r.index === 1)).toBe(true);
    // Nothing of the leg is left once its call completed: a late callback is simply noted.
    const late = await fetch(`${cluster.proxy.url}/twilio/dialout/${legId}/status`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'CallStatus=completed',
    });
    expect(late.status).toBe(204);
  });

  it('each node’s /metrics names it, and /cluster lists both with their calls and rooms', async () => {
    const views = await Promise.all(cluster.nodes.map((node) => clusterView(node.baseUrl)));
    expect(new Set(views.map((v) => v.node_id)).size).toBe(2);
    for (const view of views)
      expect(view.nodes.map((n) => n.node_id).sort()).toEqual(views.map((v) => v.node_id).sort());
    for (const [i, node] of cluster.nodes.entries()) {
      const metrics = await (await fetch(`${node.baseUrl}/metrics`)).text();
      expect(metrics).toContain(`switchboard_node_info{node_id="${views[i]!.node_id}"} 1`);
    }
  });
});

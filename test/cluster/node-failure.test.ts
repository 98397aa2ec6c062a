/**
 * Nodes that die or drain: `kill -9` of a node mid-call, and SIGTERM's drain steering new calls
 * to the other node; and the limits, which count the rooms and calls of both nodes.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { PhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { TimelineEvent } from '../../src/tools/simulator/call-report.js';
import { startWebhookReceiver } from '../fakes/webhook-receiver.js';
import { RoomClient } from '../helpers/room-client.js';
import { sampleConfig } from '../helpers/test-data.js';
import { type Cluster, NODE_TIMEOUT_SECS, clusterView, redisLookup, startCluster, until } from './cluster-harness.js';

const START_BODY = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  api_keys: sampleConfig().api_keys,
  config: [
    {
      service: 'llm',
      options: [{ name: 'initial_messages', value: [{ role: 'system', content: 'You are helpful.' }] }],
    },
  ],
  max_duration: 120,
};
const wsOf = (baseUrl: string) => baseUrl.replace(/^http/, 'ws');
const roomName = (roomUrl: string) => roomUrl.split('/rooms/')[1]!;

function firstEvent(kind: TimelineEvent['kind']) {
  let resolve!: () => void;
  const happened = new Promise<void>((r) => (resolve = r));
  return { happened, onEvent: (e: TimelineEvent) => e.kind === kind && resolve() };
}

let cluster: Cluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe.skipIf(!redisLookup.ok)('nodes failing and draining', { timeout: 120_000 }, () => {
  it('kill -9 of a node mid-call: its streams close, the other node serves on, nothing of the dead node stays claimable, and acknowledged configurations stay readable', async () => {
    cluster = await startCluster({
      SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: '60',
      SWITCHBOARD_NODE_TIMEOUT_SECS: String(NODE_TIMEOUT_SECS),
    });
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const configs = await Promise.all(
      [0, 1, 2].map(() =>
        cluster!.api(
          'POST',
          '/v1/bots/twilio-config',
          sampleConfig({ recording_settings: { type: 'cloud' } }),
          a.baseUrl,
        ),
      ),
    );
    for (const created of configs) expect(created.status).toBe(200);

    // On A: a phone call in progress (recorded), a room whose participant came in through B, and a dial-in caller on hold.
    const greeting = firstEvent('bot-audio-start');
    const phone = new PhoneCall({
      target: { webhookUrl: `${a.baseUrl}/twilio/voice/${configs[0]!.body.id}` },
      beforeMediaStream: async () => cluster!.proxy.pinNext(0),
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
      onEvent: greeting.onEvent,
    });
    const phoneReport = phone.run();
    await greeting.happened;
    const room = await cluster.api('POST', '/v1/bots/start', START_BODY, a.baseUrl);
    expect(room.status).toBe(200);
    const participant = await RoomClient.connect(
      `${wsOf(b.baseUrl)}/rooms/${roomName(room.body.room_url)}/ws`,
      room.body.token,
    );
    await participant.until('bot-ready', () => participant.of('bot-ready').length > 0);

    const number = '+14155550171';
    const secret = Buffer.alloc(32, 5).toString('base64');
    let callId: string | undefined;
    const receiver = await startWebhookReceiver(
      (to) => (to === number ? secret : undefined),
      200,
      (w) => {
        if (w.body.callId !== undefined) callId = String(w.body.callId);
      },
    );
    try {
      await cluster.api('POST', '/v1/buy-phone-number', { number });
      await cluster.api('POST', '/v1/', {
        properties: { pinless_dialin: [{ phone_number: number, room_creation_api: receiver.url, hmac: secret }] },
      });
      const held = firstEvent('bot-audio-start');
      const onHold = new PhoneCall({
        target: { webhookUrl: `${a.baseUrl}/twilio/voice` },
        to: number,
        beforeMediaStream: async () => cluster!.proxy.pinNext(0),
        scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
        onEvent: held.onEvent,
      });
      const holdReport = onHold.run();
      await held.happened;
      await until(() => callId !== undefined);
      await until(async () => (await clusterView(b.baseUrl)).nodes.find((n) => n.url === a.baseUrl)?.rooms === 1);

      a.child.kill('SIGKILL');
      await a.exited;

      // The dead node's callers are cut off; the participant relayed through B is closed as by a node going away.
      expect((await phoneReport).outcome).toBe('server-closed');
      expect((await holdReport).outcome).toBe('server-closed');
      expect((await participant.untilClosed(10_000)).code).toBe(1001);

      // After the liveness window, B has reaped A: its room and its waiting caller are nowhere.
      await until(async () => (await clusterView(b.baseUrl)).nodes.length === 1);
      const rejoin = await RoomClient.connect(
        `${wsOf(b.baseUrl)}/rooms/${roomName(room.body.room_url)}/ws`,
        room.body.token,
        { ready: false },
      );
      expect((await rejoin.untilClosed()).code).toBe(4404);
      const claim = await cluster.api(
        'POST',
        '/v1/bots/start',
        { ...START_BODY, dialin_settings: { callId } },
        b.baseUrl,
      );
      expect(claim.status).toBe(404);
      // Its recording in progress is closed by B, not left in progress.
      await until(async () => {
        const listed = await cluster!.api('GET', '/v1/recordings', undefined, b.baseUrl);
        return (
          listed.body.data.length > 0 && listed.body.data.every((r: { status: string }) => r.status !== 'in-progress')
        );
      });

      // So are its call records: the phone call and the room it served are marked interrupted by
      // B, which reaped it, and read through B.
      type Listed = { kind: string; status: string; outcome: string | null; node_id: string; call_sid: string | null };
      const interruptedRecords = async () =>
        ((await cluster!.api('GET', '/v1/calls', undefined, b.baseUrl)).body.data as Listed[]).filter(
          (c) => c.status === 'interrupted',
        );
      await until(async () => (await interruptedRecords()).length === 2);
      const records = await interruptedRecords();
      expect(records.map((c) => c.kind).sort()).toEqual(['phone', 'room']);
      for (const record of records) expect(record).toMatchObject({ outcome: 'interrupted' });
      expect(records.find((c) => c.kind === 'phone')!.call_sid).toBe((await phoneReport).callSid);

      // Every configuration acknowledged before the kill is there, and B takes new calls through the balancer.
      for (const created of configs)
        expect((await cluster.api('GET', `/v1/bots/twilio-config/${created.body.id}`)).status).toBe(200);
      const next = await new PhoneCall({
        target: { webhookUrl: `${cluster.proxy.url}/twilio/voice/${configs[1]!.body.id}` },
        scenario: { steps: [{ do: 'wait-bot-silence', ms: 600 }, { do: 'hangup' }], endOfScript: 'hangup' },
      }).run();
      expect(next.outcome).toBe('completed');
      // Its record is written by whichever node served it, and read through the balancer.
      await until(async () =>
        ((await cluster!.api('GET', '/v1/calls?status=ended')).body.data as Listed[]).some(
          (c) => c.call_sid === next.callSid,
        ),
      );
      expect(next.metrics.bot.receivedAudioMs).toBeGreaterThan(1000);
      expect(NODE_TIMEOUT_SECS).toBeLessThan(5);
    } finally {
      await receiver.close();
    }
  });

  it('SIGTERM: the draining node says 503 on /healthz and in the cluster view, its call goes on, and a new call goes to the other node', async () => {
    cluster = await startCluster({ SWITCHBOARD_DRAIN_TIMEOUT_SECS: '600' });
    const [a] = cluster.nodes as [Cluster['nodes'][0]];
    const created = await cluster.api('POST', '/v1/bots/twilio-config', sampleConfig(), a.baseUrl);
    const greeting = firstEvent('bot-audio-end');
    const live = new PhoneCall({
      target: { webhookUrl: `${a.baseUrl}/twilio/voice/${created.body.id}` },
      beforeMediaStream: async () => cluster!.proxy.pinNext(0),
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
      onEvent: greeting.onEvent,
    });
    const liveReport = live.run();
    await greeting.happened;

    a.child.kill('SIGTERM');
    await until(async () => (await fetch(`${a.baseUrl}/healthz`)).status === 503);
    await until(async () => (await clusterView(a.baseUrl)).nodes.find((n) => n.url === a.baseUrl)?.draining === true);

    // A new call through the balancer: the webhook and the stream both go to B.
    const routedBefore = cluster.proxy.routed.length;
    const next = await new PhoneCall({
      target: { webhookUrl: `${cluster.proxy.url}/twilio/voice/${created.body.id}` },
      scenario: { steps: [{ do: 'wait-bot-silence', ms: 600 }, { do: 'hangup' }], endOfScript: 'hangup' },
    }).run();
    expect(next.outcome).toBe('completed');
    expect(next.metrics.bot.receivedAudioMs).toBeGreaterThan(1000);
    expect(cluster.proxy.routed.slice(routedBefore).map((r) => r.index)).toEqual([1, 1]);

    // The call on A was never cut; when its caller hangs up, A exits cleanly.
    live.hangup();
    expect((await liveReport).outcome).toBe('completed');
    expect(await a.exited).toBe(0);
  });

  it('limits count both nodes: the rooms of the service, a room’s participants, and an account’s calls', async () => {
    cluster = await startCluster({
      SWITCHBOARD_MAX_ROOMS: '2',
      SWITCHBOARD_ROOM_MAX_PARTICIPANTS: '1',
      SWITCHBOARD_ACCOUNT_MAX_CALLS: '3',
    });
    const [a, b] = cluster.nodes as [Cluster['nodes'][0], Cluster['nodes'][0]];
    const first = await cluster.api('POST', '/v1/bots/start', START_BODY, a.baseUrl);
    const second = await cluster.api('POST', '/v1/bots/start', START_BODY, b.baseUrl);
    expect([first.status, second.status]).toEqual([200, 200]);
    for (const node of [a, b]) {
      const refused = await cluster.api('POST', '/v1/bots/start', START_BODY, node.baseUrl);
      expect(refused.status).toBe(503);
      expect(refused.body.info).toMatch(/maximum of 2 rooms/);
    }

    // One participant per room: one joined on the room's node, the next through the other is refused.
    const name = roomName(first.body.room_url);
    const inRoom = await RoomClient.connect(`${wsOf(a.baseUrl)}/rooms/${name}/ws`, first.body.token);
    await inRoom.until('bot-ready', () => inRoom.of('bot-ready').length > 0);
    const extra = await RoomClient.connect(`${wsOf(b.baseUrl)}/rooms/${name}/ws`, first.body.token);
    expect((await extra.untilClosed()).code).toBe(4409);

    // The account has two calls (the rooms); a phone call is its third, and a fourth is refused on either node.
    const created = await cluster.api('POST', '/v1/bots/twilio-config', sampleConfig());
    const third = new PhoneCall({
      target: { webhookUrl: `${a.baseUrl}/twilio/voice/${created.body.id}` },
      beforeMediaStream: async () => cluster!.proxy.pinNext(0),
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 60_000 },
    });
    const thirdReport = third.run();
    await until(async () => (await clusterView(b.baseUrl)).nodes.reduce((sum, n) => sum + n.live_calls, 0) >= 3);
    const fourth = await new PhoneCall({
      target: { webhookUrl: `${b.baseUrl}/twilio/voice/${created.body.id}` },
      beforeMediaStream: async () => cluster!.proxy.pinNext(1),
      scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 30_000 },
    }).run();
    expect(fourth.outcome).toBe('server-closed');
    expect(fourth.close?.code).toBe(1013);

    // Rooms closing give their places back, cluster-wide.
    inRoom.sendJson({ label: 'rtvi-ai', type: 'disconnect-bot' });
    await inRoom.untilClosed(10_000);
    await until(async () => (await cluster!.api('POST', '/v1/bots/start', START_BODY, b.baseUrl)).status !== 503);
    third.hangup();
    await thirdReport;
  });
});

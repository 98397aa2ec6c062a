import { afterEach, describe, expect, it } from 'vitest';
import { RoomTokens } from '../../src/rooms/room-tokens.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { TEST_KEY } from '../helpers/test-data.js';
import { connectWebRtc, offerSdp, type TestWebRtcClient } from '../helpers/webrtc-client.js';

/**
 * The SmallWebRTC offer endpoint over real sockets, with a werift client for a peer: offers and
 * candidates, every refusal with its status and reason, and what one bad peer cannot do to another
 * room. (Pipecat's own client in Chromium: test/browser/pipecat-webrtc.test.ts.)
 */

const START = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
  config: [{ service: 'llm', options: [{ name: 'run_on_config', value: true }] }],
  max_duration: 120,
  transport: 'webrtc',
};

const json = (body: unknown, method = 'POST') => ({
  method,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

describe('the WebRTC offer endpoint', () => {
  let server: CallServer | undefined;
  const clients: TestWebRtcClient[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await server?.close();
    server = undefined;
  });

  async function start(env: Record<string, string> = {}): Promise<CallServer> {
    server = await startCallServer(
      (registry) => {
        registry
          .registerStt('scripted_stt', () => new ScriptedStt([]))
          .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['Hello there.'] }))
          .registerTts('tone_tts', () => new ToneTts());
      },
      env,
      { captureLogs: true },
    );
    return server;
  }

  async function startRoom(s: CallServer, body: Record<string, unknown> = START): Promise<string> {
    const response = await fetch(`${s.baseUrl}/v1/bots/start`, {
      ...json(body),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` },
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { webrtcRequestParams: { endpoint: string }; iceConfig: unknown };
    return answer.webrtcRequestParams.endpoint;
  }

  async function join(endpoint: string): Promise<TestWebRtcClient> {
    const client = await connectWebRtc(endpoint);
    clients.push(client);
    return client;
  }

  it('answers an offer with an SDP answer and a pc_id, takes candidate batches, and hands out the ICE servers', async () => {
    const s = await start({
      SWITCHBOARD_ICE_SERVERS:
        '[{"urls":"stun:stun.example.com:3478"},{"urls":["turn:turn.example.com"],"username":"u","credential":"c"}]',
      SWITCHBOARD_WEBRTC_UDP_PORTS: '41000-41099',
    });
    const started = await fetch(`${s.baseUrl}/v1/bots/start`, {
      ...json(START),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_KEY}` },
    });
    const body = (await started.json()) as { webrtcRequestParams: { endpoint: string }; iceConfig: unknown };
    expect(body.iceConfig).toEqual({
      iceServers: [
        { urls: 'stun:stun.example.com:3478' },
        { urls: ['turn:turn.example.com'], username: 'u', credential: 'c' },
      ],
    });
    const endpoint = body.webrtcRequestParams.endpoint;
    const { pc, sdp } = await offerSdp();
    const answer = await fetch(endpoint, json({ sdp, type: 'offer', pc_id: null, restart_pc: false, requestData: {} }));
    expect(answer.status).toBe(200);
    const { sdp: answerSdp, type, pc_id } = (await answer.json()) as { sdp: string; type: string; pc_id: string };
    expect(type).toBe('answer');
    expect(pc_id).toMatch(/^[\w-]{16}$/);
    // Every candidate of the answer is on a port of the configured range.
    const ports = [...answerSdp.matchAll(/^a=candidate:\S+ \d+ udp \d+ \S+ (\d+) typ/gim)].map((m) => Number(m[1]));
    expect(ports.length).toBeGreaterThan(0);
    for (const port of ports) expect(port >= 41000 && port <= 41099).toBe(true);
    await pc.close();

    const patch = await fetch(
      endpoint,
      json(
        {
          pc_id,
          candidates: [
            { candidate: 'candidate:1 1 udp 2122260223 192.0.2.10 50000 typ host', sdp_mid: '0', sdp_mline_index: 0 },
          ],
        },
        'PATCH',
      ),
    );
    expect(patch.status).toBe(200);
    expect(await patch.json()).toEqual({ status: 'success', added: 1 });
  });

  it('refuses bad tokens, unknown rooms and pc_ids, malformed offers and oversized bodies, each with its reason', async () => {
    const s = await start();
    const endpoint = await startRoom(s);
    const url = new URL(endpoint);
    const room = url.pathname.split('/')[2]!;
    const tokens = RoomTokens.forDataDir(s.dataDir);
    const valid = { sdp: (await offerSdp()).sdp, type: 'offer', pc_id: null, restart_pc: false };
    const at = (token: string | undefined, name = room) =>
      `${s.baseUrl}/rooms/${name}/offer${token === undefined ? '' : `?token=${encodeURIComponent(token)}`}`;
    const refused = async (target: string, body: unknown, method = 'POST') => {
      const response = await fetch(target, json(body, method));
      return { status: response.status, body: (await response.json()) as { error: string; info?: string } };
    };

    expect(await refused(at(undefined), valid)).toEqual({
      status: 401,
      body: { error: 'authentication-error', info: 'missing or malformed room token' },
    });
    expect((await refused(at(tokens.issue('elsewhere', Date.now() / 1000 + 60)), valid)).status).toBe(403);
    expect(await refused(at(tokens.issue('nosuchroom', Date.now() / 1000 + 60), 'nosuchroom'), valid)).toEqual({
      status: 404,
      body: { error: 'not-found', info: 'room not found or has closed' },
    });
    expect((await refused(endpoint, { ...valid, sdp: 'v=0\r\nthis is not sdp' })).status).toBe(400);
    const garbage = await refused(endpoint, { ...valid, sdp: 'hello' });
    expect(garbage).toEqual({
      status: 400,
      body: { error: 'invalid-request-error', info: expect.stringContaining('sdp must be a session description') },
    });
    expect((await refused(endpoint, { ...valid, type: 'answer' })).status).toBe(400);
    expect(await refused(endpoint, { ...valid, pc_id: 'not-one-of-ours' })).toEqual({
      status: 404,
      body: { error: 'not-found', info: 'unknown pc_id: send the first offer without one' },
    });
    expect((await refused(endpoint, { ...valid, sdp: `v=0\r\n${'a'.repeat(60_000)}` })).status).toBe(413);
    expect(await refused(endpoint, { pc_id: 'unknown', candidates: [] }, 'PATCH')).toEqual({
      status: 404,
      body: { error: 'not-found', info: 'unknown pc_id' },
    });
    // None of it touched the room: a real offer still joins.
    const client = await join(endpoint);
    expect(client.pcId).toMatch(/^[\w-]+$/);
  });

  it('a PATCH flood is refused for that peer only; a full room refuses a second peer', async () => {
    const s = await start({ SWITCHBOARD_ROOM_MAX_PARTICIPANTS: '1' });
    const endpoint = await startRoom(s);
    const client = await join(endpoint);
    // 30 at once: a flood whatever each request's round trip (sent one after another on a loaded
    // machine, they came slower than the bucket refills).
    const statuses = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const response = await fetch(endpoint, json({ pc_id: client.pcId, candidates: [] }, 'PATCH'));
        return response.status;
      }),
    );
    expect(statuses.filter((code) => code === 200).length).toBeGreaterThanOrEqual(20);
    expect(statuses.filter((code) => code !== 200 && code !== 429)).toEqual([]);
    expect(statuses).toContain(429);
    const full = await fetch(endpoint, json({ sdp: (await offerSdp()).sdp, type: 'offer', pc_id: null }));
    expect(full.status).toBe(409);
    expect(await full.json()).toEqual({ error: 'conflict-error', info: 'room is full (1 participants)' });
    // Another room on the same node is untouched by both.
    const other = await join(await startRoom(s));
    other.dc.send(JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', id: '1', data: { version: '1.0.0' } }));
    await expect.poll(() => other.messages.some((m) => m.includes('"bot-ready"')), { timeout: 10_000 }).toBe(true);
  });

  it('an oversized or malformed data channel message ends that peer with a reason; a restart keeps the room', async () => {
    const s = await start();
    const endpoint = await startRoom(s);
    const client = await join(endpoint);
    client.dc.send(JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', id: '1', data: { version: '1.0.0' } }));
    await expect.poll(() => client.messages.some((m) => m.includes('"bot-ready"')), { timeout: 10_000 }).toBe(true);

    // restart_pc with the same pc_id: a new connection for the same participant, which stays ready.
    const { pc: pc2, dc: dc2, sdp } = await offerSdp();
    clients.push({ ...client, pc: pc2, dc: dc2, close: () => pc2.close() });
    const restarted = await fetch(endpoint, json({ sdp, type: 'offer', pc_id: client.pcId, restart_pc: true }));
    expect(restarted.status).toBe(200);
    const answer = (await restarted.json()) as { sdp: string; pc_id: string };
    expect(answer.pc_id).toBe(client.pcId);
    // The answer announces the limit (a browser keeps to it); this client ignores it.
    await pc2.setRemoteDescription({
      type: 'answer',
      sdp: answer.sdp.replace(/a=max-message-size:\d+/, 'a=max-message-size:262144'),
    });
    expect(answer.sdp).toContain('a=max-message-size:65536');
    const messages: string[] = [];
    dc2.onMessage.subscribe((data) => messages.push(data.toString()));
    await new Promise<void>((resolve) =>
      dc2.readyState === 'open' ? resolve() : dc2.stateChanged.subscribe((st) => st === 'open' && resolve()),
    );
    // A message over the limit (64 KiB): refused with an error, the peer is told the bot left.
    dc2.send(JSON.stringify({ label: 'rtvi-ai', type: 'send-text', data: { text: 'x'.repeat(70 * 1024) } }));
    await expect.poll(() => messages.some((m) => m.includes('peerLeft')), { timeout: 10_000 }).toBe(true);
    expect(messages.find((m) => m.includes('"error"'))).toContain('message over 65536 bytes');
  });

  it('a peer that vanishes without a word is noticed within seconds, and the room ends as for a socket', async () => {
    const s = await start({ SWITCHBOARD_ROOM_EMPTY_GRACE_SECS: '0' });
    const endpoint = await startRoom(s);
    const client = await join(endpoint);
    client.dc.send(JSON.stringify({ label: 'rtvi-ai', type: 'client-ready', id: '1', data: { version: '1.0.0' } }));
    await expect.poll(() => client.messages.some((m) => m.includes('"bot-ready"')), { timeout: 10_000 }).toBe(true);
    // The client stops sending anything (no microphone, no keep-alive), as a closed laptop would.
    const record = await s.waitForLog((r) => r.msg === 'webrtc peer gone', 15_000);
    expect(String(record.reason)).toContain('went silent');
    await s.waitForLog((r) => r.msg === 'room closed' && r.reason === 'everyone left', 10_000);
    const late = await fetch(endpoint, json({ sdp: (await offerSdp()).sdp, type: 'offer', pc_id: null }));
    expect(late.status).toBe(404);
  });
});

import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { LlmMessage } from '../../src/providers/types.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import type { Scenario } from '../../src/tools/simulator/scenario.js';
import { type ScriptedToolTurn, ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type ToolBehaviour, startToolReceiver } from '../fakes/tool-webhook-receiver.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { waitFor } from '../helpers/wait.js';
import { startFakeTwilioRest } from '../fakes/fake-twilio-rest.js';
import { type Clock, scaledClock } from '../../src/shared/clock.js';

/**
 * Function calling on a phone call, over real sockets: the simulator calls, real Silero VAD takes
 * turns, the voice streams at real time, and the functions are webhooks on a receiver reached by
 * host name.
 *
 * "Real time" is a clock SPEED times faster than wall time (shared/clock.ts), shared by the
 * server, the simulator, the voice's pacing and the webhooks' delays: what these tests check is
 * what the calls say and do, in order, not how long they take (docs/testing.md).
 */
const SPEED = 3;
const FAST: Clock = scaledClock(SPEED);

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
const QUESTION = 'the birch canoe slid on the smooth planks';
const SECOND = 'go forward ten meters';
const THIRD = 'the cheetah platforms';
const SECRET = 'a-webhook-secret-of-some-length';

const closers: Array<() => Promise<void>> = [];
let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const close of closers.splice(0)) await close();
});

function schema(name: string) {
  return {
    type: 'function',
    function: {
      name,
      description: `the ${name} function`,
      parameters: { type: 'object', properties: { party: { type: 'number' } } },
    },
  };
}

interface ToolCallSetUp {
  replies: Array<string | ScriptedToolTurn>;
  behaviours: Record<string, ToolBehaviour>;
  /** Extra fields per webhook_tools entry. */
  entries?: Record<string, Record<string, unknown>>;
  extraTools?: Array<Record<string, unknown> | string>;
  scenario: Scenario;
  env?: Record<string, string>;
  callSid?: string;
  authToken?: string;
  /** More fields of the configuration; a function builds them from the receiver. */
  extraConfig?: (receiver: { urlOf(name: string): string }) => Record<string, unknown>;
}

async function toolCall(setUp: ToolCallSetUp) {
  const receiver = await startToolReceiver(setUp.behaviours, FAST);
  closers.push(receiver.close);
  const llm = new ScriptedLlm({ replies: setUp.replies });
  const tts = new ToneTts(40, 20, undefined, 0, { realTime: true, clock: FAST });
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => new ScriptedStt([QUESTION, SECOND, THIRD]))
        .registerLlm('scripted_llm', () => llm)
        .registerTts('tone_tts', () => tts);
    },
    setUp.env ?? {},
    { captureLogs: true, clock: FAST },
  );
  const names = Object.keys(setUp.behaviours);
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [
      { service: 'vad', options: [{ name: 'params', value: { stop_secs: 0.3 } }] },
      {
        service: 'llm',
        options: [
          { name: 'initial_messages', value: [{ role: 'system', content: 'You book tables.' }] },
          { name: 'tools', value: [...names.map(schema), ...(setUp.extraTools ?? [])] },
        ],
      },
    ],
    webhook_tools: Object.fromEntries(
      names.map((name) => [name, { url: receiver.urlOf(name), ...(setUp.entries?.[name] ?? {}) }]),
    ),
    webhook_secret: SECRET,
    ...(setUp.extraConfig?.(receiver) ?? {}),
  });
  const report = await runPhoneCall({
    target: { wssUrl },
    clock: FAST,
    callSid: setUp.callSid,
    authToken: setUp.authToken,
    clips: {
      birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) },
      forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
      cheetah: { mulaw: await readMulawFile(fixture('A04_cheetah_platforms.ulaw')) },
    },
    scenario: setUp.scenario,
  });
  const ended = await server.waitForLog((r) => r.msg === 'call ended');
  return { report, llm, tts, receiver, summary: ended as Record<string, unknown> & { tools: Record<string, any> } };
}

const ASK_AND_LISTEN: Scenario = {
  steps: [
    { do: 'play', clip: 'birch' },
    { do: 'wait-bot-audio', timeoutMs: 15_000 },
    { do: 'wait-bot-silence', ms: 1500, timeoutMs: 30_000 },
  ],
};

/** Every assistant message's function calls are answered by tool messages right behind it, in order. */
function expectAnsweredCalls(messages: LlmMessage[]): void {
  messages.forEach((message, i) => {
    if (!message.toolCalls?.length) return;
    const answers = messages.slice(i + 1, i + 1 + message.toolCalls.length);
    expect(answers.map((m) => m.role)).toEqual(message.toolCalls.map(() => 'tool'));
    expect(answers.map((m) => m.toolCallId)).toEqual(message.toolCalls.map((c) => c.id));
  });
}

describe('function calls on a phone call', () => {
  it('a fast function: one signed webhook request, its result in the context, the answer spoken', async () => {
    const { report, llm, tts, receiver, summary } = await toolCall({
      replies: [
        { text: 'Let me look.', calls: [{ name: 'check_table', arguments: { party: 4 }, id: 'call_a' }] },
        'A table for four is free at seven.',
      ],
      behaviours: { check_table: { result: { available: true, time: '19:00' } } },
      scenario: ASK_AND_LISTEN,
    });
    expect(report.outcome).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]!.body).toEqual({
      function_name: 'check_table',
      tool_call_id: 'call_a',
      arguments: { party: 4 },
    });
    expect(receiver.requests[0]!.headers['x-switchboard-signature']).toBeTruthy();
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[0]!.tools).toEqual([schema('check_table')]);
    const second = llm.requests[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(second[2]).toMatchObject({
      content: 'Let me look.',
      toolCalls: [{ id: 'call_a', name: 'check_table', argumentsJson: '{"party":4}' }],
    });
    expect(JSON.parse(second[3]!.content)).toEqual({ available: true, time: '19:00' });
    expect(second[3]).toMatchObject({ toolCallId: 'call_a', toolName: 'check_table' });
    expect(tts.pieces).toEqual(['Let me look.', 'A table for four is free at seven.']);
    expect(summary.tools).toEqual({ check_table: { calls: 1, failures: 0, latencyMs: [expect.any(Number)] } });
    // The simulated carrier saw the call start and end (the server marks them on the media stream).
    const toolEvents = report.timeline.filter((e) => e.kind === 'tool-call').map((e) => e.detail);
    expect(toolEvents).toEqual(['check_table started', 'check_table ok']);
    expect(report.metrics.tools).toEqual({ started: 1, byOutcome: { ok: 1 }, byTool: { check_table: 1 } });
    expect(report.metrics.violations.total).toBe(0);
    const metrics = await (await fetch(`${server!.baseUrl}/metrics`)).text();
    expect(metrics).toContain('switchboard_tool_calls_total{tool="check_table",result="ok"} 1');
  });

  it('a slow function: the filler phrase (the tool `say`) is heard once while it runs', async () => {
    const { report, llm, tts, receiver } = await toolCall({
      replies: [{ calls: [{ name: 'check_table', arguments: { party: 2 } }] }, 'You are booked.'],
      behaviours: { check_table: { delayMs: 3000, result: { booked: true } } },
      entries: { check_table: { say: 'Let me check the book for you.' } },
      scenario: ASK_AND_LISTEN,
    });
    expect(report.outcome).toBe('completed');
    expect(receiver.requests).toHaveLength(1);
    expect(tts.pieces).toEqual(['Let me check the book for you.', 'You are booked.']);
    // The filler went out while the webhook was still working on the answer.
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThan(0);
    const second = llm.requests[1]!.messages;
    expect(second[2]).toMatchObject({ role: 'assistant', content: 'Let me check the book for you.' });
    expect(JSON.parse(second[3]!.content)).toEqual({ booked: true });
  });

  it('parallel calls run at once, and the model runs once more after both answered', async () => {
    const { llm, receiver, summary, tts } = await toolCall({
      replies: [
        {
          calls: [
            { name: 'check_table', arguments: { party: 2 }, id: 'c1' },
            { name: 'check_weather', arguments: {}, id: 'c2' },
          ],
        },
        'Table free, and it is sunny.',
      ],
      behaviours: {
        check_table: { delayMs: 1500, result: { free: true } },
        check_weather: { delayMs: 1500, result: { sky: 'sunny' } },
      },
      scenario: ASK_AND_LISTEN,
    });
    expect(receiver.requests).toHaveLength(2);
    const [a, b] = receiver.requests;
    // Both were asked before either answered.
    expect(Math.max(a!.receivedAtMs, b!.receivedAtMs)).toBeLessThan(Math.min(a!.answeredAtMs!, b!.answeredAtMs!));
    expect(llm.requests).toHaveLength(2);
    const second = llm.requests[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expectAnsweredCalls(second);
    expect(second.slice(3).map((m) => JSON.parse(m.content))).toEqual([{ free: true }, { sky: 'sunny' }]);
    expect(tts.pieces.at(-1)).toBe('Table free, and it is sunny.');
    expect(Object.keys(summary.tools).sort()).toEqual(['check_table', 'check_weather']);
  });

  it('a caller who interrupts while a function runs: one webhook request, a valid context, the result kept', async () => {
    const { report, llm, receiver } = await toolCall({
      replies: [
        { text: 'Let me book that for you.', calls: [{ name: 'book_table', arguments: { party: 3 }, id: 'b1' }] },
        'Sure, what else?',
        'Your booking went through.',
      ],
      behaviours: { book_table: { delayMs: 4000, result: { booking: 'R-17' } } },
      scenario: {
        steps: [
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-audio', thenMs: 600, timeoutMs: 15_000 },
          // Over the bot's "Let me book that for you.": a barge-in while the booking runs.
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-audio', timeoutMs: 15_000 },
          { do: 'wait-bot-silence', ms: 800, timeoutMs: 30_000 },
          { do: 'wait', ms: 3500 },
          { do: 'play', clip: 'cheetah' },
          { do: 'wait-bot-audio', timeoutMs: 15_000 },
          { do: 'wait-bot-silence', ms: 800, timeoutMs: 30_000 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');
    // The caller's words cut the reply that was waiting on the booking.
    expect(server!.logs.filter((r) => r.msg === 'caller interrupted the bot')).toHaveLength(1);
    // The booking was made once, and never again.
    expect(receiver.requests).toHaveLength(1);
    expect(llm.requests).toHaveLength(3);
    for (const request of llm.requests) expectAnsweredCalls(request.messages);
    // Asked while the booking ran: its call is answered by a placeholder saying so.
    const second = llm.requests[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(JSON.parse(second[3]!.content)).toMatchObject({ status: 'running' });
    // Asked after it came back: the result is in the context.
    const third = llm.requests[2]!.messages;
    const toolMessage = third.find((m) => m.role === 'tool')!;
    expect(JSON.parse(toolMessage.content)).toEqual({ booking: 'R-17' });
  });

  it('a failing and a hanging webhook: error results the model explains; the caller hears it', async () => {
    const { report, llm, tts, summary } = await toolCall({
      replies: [
        {
          calls: [
            { name: 'check_table', arguments: {}, id: 'f1' },
            { name: 'check_weather', arguments: {}, id: 'h1' },
          ],
        },
        'Sorry, I cannot reach the booking system right now.',
      ],
      behaviours: { check_table: { status: 500, result: { oops: true } }, check_weather: { hang: true } },
      entries: { check_weather: { timeout_secs: 2 } },
      scenario: ASK_AND_LISTEN,
    });
    const second = llm.requests[1]!.messages;
    expectAnsweredCalls(second);
    const [failed, hung] = second.filter((m) => m.role === 'tool');
    expect(JSON.parse(failed!.content)).toHaveProperty('error');
    expect(JSON.parse(hung!.content)).toHaveProperty('error');
    // Not silence: the filler while waiting, then the explanation.
    expect(tts.pieces).toEqual(['One moment, please.', 'Sorry, I cannot reach the booking system right now.']);
    expect(summary.tools.check_table).toMatchObject({ calls: 1, failures: 1 });
    expect(summary.tools.check_weather).toMatchObject({ calls: 1, failures: 1 });
    expect(report.metrics.tools).toEqual({
      started: 2,
      byOutcome: { error: 1, timeout: 1 },
      byTool: { check_table: 1, check_weather: 1 },
    });
    // /metrics counts them too, per function.
    const metrics = await (await fetch(`${server!.baseUrl}/metrics`)).text();
    expect(metrics).toContain('switchboard_tool_calls_total{tool="check_table",result="failed"} 1');
    expect(metrics).toContain('switchboard_tool_calls_total{tool="check_weather",result="failed"} 1');
    expect(metrics).toMatch(/switchboard_tool_call_seconds_count\{tool="check_weather"\} 1/);
  });

  it('a streaming webhook: its tts:say is spoken at once and its result goes to the model', async () => {
    const { llm, tts } = await toolCall({
      replies: [{ calls: [{ name: 'check_table', arguments: {} }] }, 'Done, you are booked.'],
      behaviours: {
        check_table: {
          sse: [
            { event: 'action', data: { action: 'tts:say', arguments: { text: 'I am asking the restaurant.' } } },
            { event: 'result', data: { booked: true } },
          ],
          gapMs: 1500,
        },
      },
      entries: { check_table: { streaming: true } },
      scenario: ASK_AND_LISTEN,
    });
    expect(tts.pieces).toEqual(['I am asking the restaurant.', 'Done, you are booked.']);
    const second = llm.requests[1]!.messages;
    expect(JSON.parse(second.at(-1)!.content)).toEqual({ booked: true });
  });

  it('end_call: the bot says goodbye and the call ends from its side', async () => {
    const { report, tts, summary } = await toolCall({
      replies: [{ text: 'Goodbye, and thanks!', calls: [{ name: 'end_call', arguments: {} }] }, ''],
      behaviours: {},
      extraTools: [{ type: 'function', function: { name: 'end_call' } }],
      scenario: { steps: [{ do: 'play', clip: 'birch' }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    expect(tts.pieces).toEqual(['Goodbye, and thanks!']);
    expect(summary).toMatchObject({ reason: expect.any(String), tools: { end_call: { calls: 1, failures: 0 } } });
    await waitFor(() => server!.logs.find((r) => r.msg === 'call ended'));
  });

  it('send_dtmf: the keys sound after what the bot said, the other end hears them, no filler, then the model goes on', async () => {
    const { report, llm, tts, summary } = await toolCall({
      replies: [
        {
          text: 'Pressing two for bookings.',
          calls: [{ name: 'send_dtmf', arguments: { digits: '2w#' }, id: 'call_k' }],
        },
        'I am through to bookings.',
      ],
      behaviours: {},
      extraTools: [{ type: 'function', function: { name: 'send_dtmf' } }],
      scenario: ASK_AND_LISTEN,
    });
    expect(report.outcome).toBe('completed');
    // The simulated far end decoded the tones in the audio it heard, as an IVR does.
    expect(report.metrics.bot.keysHeard).toBe('2#');
    // After the sentence before them had been played (the tone voice speaks 40 ms per character).
    const speechStartMs = report.timeline.find((e) => e.kind === 'bot-audio-start')!.atMs;
    const firstKeyMs = report.timeline.find((e) => e.kind === 'dtmf-heard')!.atMs;
    expect(firstKeyMs - speechStartMs).toBeGreaterThanOrEqual('Pressing two for bookings.'.length * 40);
    // The sentence, two keys of 200 ms and a 500 ms wait, and the answer all reached the far end.
    expect(report.metrics.bot.playedAudioMs).toBeGreaterThanOrEqual((26 + 25) * 40 + 900);
    // Tones are not speech: no filler phrase over them, although they took over a second.
    expect(tts.pieces).toEqual(['Pressing two for bookings.', 'I am through to bookings.']);
    const second = llm.requests[1]!.messages;
    expect(second[3]).toMatchObject({ role: 'tool', toolCallId: 'call_k' });
    expect(JSON.parse(second[3]!.content)).toMatchObject({ sent: '2w#' });
    expect(summary.tools).toEqual({ send_dtmf: { calls: 1, failures: 0, latencyMs: [expect.any(Number)] } });
  });

  const TRANSFER = { type: 'function', function: { name: 'transfer_call' } };
  const transferTurn = (target: string): ScriptedToolTurn => ({
    text: 'Putting you through to the front desk.',
    calls: [{ name: 'transfer_call', arguments: { target } }],
  });

  it('transfer_call on Twilio: the call is redirected to <Dial> over REST, not hung up, and the summary says transferred', async () => {
    const SID = `AC${'f'.repeat(32)}`;
    const AUTH_TOKEN = 'transfer-test-token';
    const twilio = await startFakeTwilioRest(SID, AUTH_TOKEN);
    closers.push(twilio.close);
    const callSid = `CA${'8'.repeat(32)}`;
    twilio.addLiveCall(callSid);
    const { report, tts, summary } = await toolCall({
      replies: [transferTurn('+14155550100'), ''],
      behaviours: {},
      extraTools: [TRANSFER],
      env: {
        SWITCHBOARD_CARRIER: 'twilio',
        TWILIO_ACCOUNT_SID: SID,
        TWILIO_AUTH_TOKEN: AUTH_TOKEN,
        SWITCHBOARD_TWILIO_URL: twilio.url,
      },
      callSid,
      authToken: AUTH_TOKEN,
      scenario: { steps: [{ do: 'play', clip: 'birch' }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    // What the model said before the transfer is heard whole first.
    expect(tts.pieces).toEqual(['Putting you through to the front desk.']);
    const updates = twilio.requests.filter((r) => r.path.endsWith(`/Calls/${callSid}.json`));
    expect(updates).toHaveLength(1);
    expect(updates[0]!.form.Twiml).toContain('<Dial><Number>+14155550100</Number></Dial>');
    expect(updates[0]!.form.Status).toBeUndefined();
    expect(summary.reason).toBe('transferred');
    expect(summary.tools).toMatchObject({ transfer_call: { calls: 1, failures: 0 } });
  });

  it('transfer_call on the sandbox carrier: the target rings and the simulated callee answers; a number outside the sandbox is an error the model explains', async () => {
    const hmac = Buffer.from('status-callback-secret-for-transfers').toString('base64');
    const { report, llm, summary, receiver } = await toolCall({
      replies: [
        transferTurn('+15551234567'),
        {
          text: 'Let me try the desk instead.',
          calls: [{ name: 'transfer_call', arguments: { target: '+14155550142' } }],
        },
        '',
      ],
      behaviours: {},
      extraTools: [TRANSFER],
      extraConfig: (hooks) => ({ status_callback: { url: hooks.urlOf('call-status'), hmac } }),
      callSid: `CA${'9'.repeat(32)}`,
      scenario: { steps: [{ do: 'play', clip: 'birch' }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    const refused = llm.requests[1]!.messages.find((m) => m.role === 'tool')!;
    expect(JSON.parse(refused.content).error).toContain('not a sandbox number');
    expect(summary.reason).toBe('transferred');
    // The carrier dialled the target, and the simulated callee took the transferred caller.
    const callSid = `CA${'9'.repeat(32)}`;
    const dialled = await server!.waitForLog((r) => r.msg === 'sandbox transfer: dialling the target');
    expect(dialled).toMatchObject({ callSid, target: '+14155550142' });
    const answered = await server!.waitForLog((r) => r.msg === 'sandbox callee answered a transferred call');
    expect(answered).toMatchObject({ callSid: dialled.legCallSid, transferredCallSid: callSid, to: '+14155550142' });
    await server!.waitForLog(
      (r) => r.msg === 'sandbox transfer: the target hung up' && r.callSid === dialled.legCallSid,
    );
    // The customer's status callback says the call was transferred.
    const posted = await waitFor(() => receiver.requests.find((r) => r.path === '/tools/call-status'));
    const status = posted.body as { call: Record<string, unknown> };
    expect(status.call).toMatchObject({ call_sid: callSid, outcome: 'transferred', end_reason: 'transferred' });
  });

  it('transfer_call on the sandbox carrier to a busy number: the leg is busy, and the call has still left the bot', async () => {
    const { report, summary } = await toolCall({
      replies: [transferTurn('+14155550198'), ''],
      behaviours: {},
      extraTools: [TRANSFER],
      callSid: `CA${'7'.repeat(32)}`,
      scenario: { steps: [{ do: 'play', clip: 'birch' }], endOfScript: 'stay', maxDurationMs: 30_000 },
    });
    expect(report.outcome).toBe('server-closed');
    expect(summary.reason).toBe('transferred');
    const busy = await server!.waitForLog((r) => r.msg === 'sandbox transfer: the target did not take the call');
    expect(busy).toMatchObject({ callStatus: 'busy', transferredCallSid: `CA${'7'.repeat(32)}` });
    expect(server!.logs.some((r) => r.msg === 'sandbox callee answered a transferred call')).toBe(false);
  });
});

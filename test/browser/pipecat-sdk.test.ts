import { describe, expect, it } from 'vitest';
import { PipecatWsClient } from '../helpers/pipecat-ws-client.js';
import {
  ANSWER,
  CHROMIUM,
  GREETING,
  HEARD,
  keepToLocalhost,
  LONG_REPLY,
  SKIP_NOTE,
  type SdkEvent,
  scriptedStartBody,
  scriptedSuite,
  startBot,
  TONE_MS_PER_CHAR,
  untilEvent as untilSdkEvent,
  watchedPage,
} from './pipecat-harness.js';

/**
 * Pipecat's own client SDK and websocket transport in headless Chromium, against a real server
 * (room transport, Silero VAD, turn-taking; scripted STT/LLM/TTS). The page is bundled from the
 * installed packages with esbuild and served by this test from its own localhost origin, which
 * the server allows to call bots/start (SWITCHBOARD_CORS_ORIGINS); any request beyond localhost
 * is refused and counted. Chromium's fake microphone plays a fixture
 * recording: quiet through the greeting, a question, then the same words again over the bot's
 * long answer, which interrupts it. Skipped where no Chromium is installed.
 */

/** The transport's player runs at 24 kHz. */
const PLAYER_RATE_HZ = 24000;

/** The websocket page's events (pipecat-sdk-page.ts): the bot audio received so far, samples. */
interface WsSdkEvent extends SdkEvent {
  botSamples: number;
}

const untilEvent = untilSdkEvent<WsSdkEvent>;

describe.skipIf(!CHROMIUM)(`the Pipecat client SDK in headless Chromium${SKIP_NOTE}`, () => {
  const suite = scriptedSuite({
    page: './pipecat-sdk-page.ts',
    title: 'Pipecat SDK',
    quiet: { leadSecs: 4, gapSecs: 3, tailSecs: 8 },
  });

  it('startBotAndConnect joins; the greeting plays; transcripts, answers, metrics and an interruption reach the callbacks; disconnectBot ends the room', async () => {
    // The front-end lives on its own origin, as a team's would; the server lets it call bots/start.
    const { frontOrigin, origin, stt, llm } = await suite.start();
    const { page, consoleErrors } = await watchedPage(suite.browser());
    // Nothing may be fetched from anywhere but localhost.
    const elsewhere = await keepToLocalhost(page);
    await page.goto(`${frontOrigin}/`);
    const { outcome, answer } = await startBot(page, `${origin}/v1/bots/start`, scriptedStartBody('websocket'));
    expect(outcome).toBe('connected');
    expect(Object.keys(answer)).toEqual(['ws_url']);

    // The greeting: spoken, handed to the SDK's player in full, and played.
    let events = await untilEvent(page, 'the greeting', (e) => e.some((x) => x.type === 'botStoppedSpeaking'));
    expect(events.filter((e) => e.type === 'botReady')).toHaveLength(1);
    const greetingSamples = events.find((e) => e.type === 'botStoppedSpeaking')!.botSamples;
    expect((greetingSamples / PLAYER_RATE_HZ) * 1000).toBeGreaterThan(GREETING.length * TONE_MS_PER_CHAR * 0.9);
    await expect
      .poll(
        () =>
          page.evaluate(() =>
            (globalThis as unknown as { sdkTest: { playedSamples(): Promise<number> } }).sdkTest.playedSamples(),
          ),
        { timeout: 10_000 },
      )
      .toBeGreaterThan(PLAYER_RATE_HZ / 2);
    expect(
      events
        .filter((e) => e.type === 'botLlmText')
        .map((e) => e.data!.text)
        .join(''),
    ).toBe(GREETING);

    // The question, heard from the microphone: the user's transcript, then the long answer.
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
    events = await untilEvent(page, 'metrics', (e) => e.some((x) => x.type === 'metrics'));
    expect(events.find((e) => e.type === 'metrics')!.data!.turnLatencyMs).toBeGreaterThan(0);

    // The same words over the long answer interrupt it: the user starts speaking while the bot
    // talks, and the bot stops before it has said much of it.
    events = await untilEvent(
      page,
      'the interruption',
      (e) => e.filter((x) => x.type === 'botStoppedSpeaking').length >= 2,
      30_000,
    );
    const longStart = events.filter((e) => e.type === 'botStartedSpeaking')[1]!;
    const cut = events.filter((e) => e.type === 'botStoppedSpeaking')[1]!;
    const between = events.slice(events.indexOf(longStart), events.indexOf(cut)).map((e) => e.type);
    expect(between).toContain('userStartedSpeaking');
    expect(((cut.botSamples - longStart.botSamples) / PLAYER_RATE_HZ) * 1000).toBeLessThan(
      LONG_REPLY.length * TONE_MS_PER_CHAR * 0.8,
    );

    // The answer to the interrupting words, as the bot's transcript.
    events = await untilEvent(
      page,
      'the answer',
      (e) => e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER),
      30_000,
    );
    expect(llm.requests[2]!.messages.at(-1)).toEqual({ role: 'user', content: HEARD });
    // The context keeps only what was heard of the long answer.
    const heard = llm.requests[2]!.messages.find((m) => m.role === 'assistant' && m.content !== GREETING)!.content;
    expect(heard.length).toBeLessThan(LONG_REPLY.length);

    // disconnectBot: the bot leaves and the room ends; its address is refused from then on.
    await page.evaluate(() =>
      (globalThis as unknown as { sdkTest: { disconnectBot(): void } }).sdkTest.disconnectBot(),
    );
    await expect.poll(() => stt.closed, { timeout: 10_000 }).toBe(1);
    // The SDK sees the server close the socket, as when a Pipecat bot leaves, and disconnects.
    events = await untilEvent(page, 'the SDK disconnecting', (e) => e.some((x) => x.type === 'disconnected'));
    expect(JSON.stringify(events.filter((e) => e.type === 'error').map((e) => e.data))).toContain('Code: 1000');
    const late = await PipecatWsClient.connect(answer.ws_url);
    expect(await late.untilClosed()).toEqual({ code: 4404, reason: 'room not found or has closed' });

    expect(elsewhere).toEqual([]);
    expect(consoleErrors.filter((e) => /deserialize|Unrecognized connection parameter/i.test(e))).toEqual([]);
    await page.close();
  });

  it('a function neither webhook nor built in is asked of the client: registerFunctionCallHandler answers, and the bot runs again with its result', async () => {
    const { frontOrigin, origin, llm } = await suite.start([
      GREETING,
      { calls: [{ name: 'check_table', arguments: { party: 4 }, id: 'call_room_1' }] },
      ANSWER,
    ]);
    const page = await suite.browser().newPage();
    await page.goto(`${frontOrigin}/`);
    await page.evaluate(() =>
      (
        globalThis as unknown as { sdkTest: { registerFunction(n: string, r: unknown): void } }
      ).sdkTest.registerFunction('check_table', { free: true, table: 12 }),
    );
    const tool = {
      type: 'function',
      function: {
        name: 'check_table',
        description: 'Whether a table is free',
        parameters: { type: 'object', properties: { party: { type: 'number' } } },
      },
    };
    const { outcome } = await startBot(
      page,
      `${origin}/v1/bots/start`,
      scriptedStartBody('websocket', [{ name: 'tools', value: [tool] }]),
    );
    expect(outcome).toBe('connected');

    // The question makes the model call check_table; the SDK hands it to the registered handler.
    const events = await untilEvent(page, 'the function call', (e) => e.some((x) => x.type === 'functionCall'), 40_000);
    expect(events.filter((e) => e.type === 'functionCall').map((e) => e.data)).toEqual([
      { functionName: 'check_table', arguments: { party: 4 } },
    ]);
    // The handler's answer is the function's result in the model's next pass, and the answer is spoken.
    await untilEvent(
      page,
      'the answer',
      (e) => e.some((x) => x.type === 'botTranscript' && x.data!.text === ANSWER),
      30_000,
    );
    expect(llm.requests[1]!.tools).toEqual([tool]);
    const messages = llm.requests[2]!.messages;
    expect(messages.find((m) => m.role === 'assistant' && m.toolCalls)).toMatchObject({
      toolCalls: [{ id: 'call_room_1', name: 'check_table', argumentsJson: '{"party":4}' }],
    });
    const result = messages.find((m) => m.role === 'tool')!;
    expect(result).toMatchObject({ toolCallId: 'call_room_1', toolName: 'check_table' });
    expect(JSON.parse(result.content)).toEqual({ free: true, table: 12 });
    await page.close();
  });
});

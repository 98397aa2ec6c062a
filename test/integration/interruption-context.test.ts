import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';

/**
 * What the model remembers of a reply the caller cut off, with a voice that streams at real time
 * (so the sentence playing at the interruption is still being synthesised) over real sockets.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));

const SYSTEM = 'You are the front desk of a small hotel.';
const QUESTION = 'the birch canoe';
const INTERRUPTION = 'go forward ten meters';
const SENTENCE_ONE = 'We have rooms with a view of the harbour and rooms with a garden terrace.';
const SENTENCE_TWO = 'Every stay includes breakfast, parking, and late checkout on Sundays if you ask at the desk.';
const MS_PER_CHAR = 40;
/** How long the voice takes to say sentence one (the tone lasts MS_PER_CHAR per character). */
const SENTENCE_ONE_MS = SENTENCE_ONE.length * MS_PER_CHAR;

const words = (text: string) => text.trim().split(/\s+/);

let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A call where the caller asks, the bot answers in two sentences, and the caller cuts in `interruptAtMs` into the answer. */
async function interruptedCall(interruptAtMs: number) {
  const stt = new ScriptedStt([QUESTION, INTERRUPTION]);
  const llm = new ScriptedLlm({ replies: [`${SENTENCE_ONE} ${SENTENCE_TWO}`, 'Of course.'] });
  const tts = new ToneTts(MS_PER_CHAR, 20, undefined, 0, { realTime: true });
  server = await startCallServer((registry) => {
    registry
      .registerStt('scripted_stt', () => stt)
      .registerLlm('scripted_llm', () => llm)
      .registerTts('tone_tts', () => tts);
  });
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [{ service: 'llm', options: [{ name: 'initial_messages', value: [{ role: 'system', content: SYSTEM }] }] }],
  });
  const report = await runPhoneCall({
    target: { wssUrl },
    clips: {
      // The first 1.2 s of the sentence, up to its first pause: the question's length is not the
      // subject, and the caller says it in real time.
      question: { mulaw: (await readMulawFile(fixture('A06_birch_canoe.ulaw'))).slice(0, 1200 * 8) },
      forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) },
    },
    scenario: {
      steps: [
        { do: 'play', clip: 'question' },
        { do: 'wait-bot-audio', thenMs: interruptAtMs },
        { do: 'play', clip: 'forward' },
        { do: 'wait-bot-silence', ms: 600 },
      ],
    },
  });
  return { report, llm };
}

/** The next request's messages after the interruption, with the heard reply's words. */
function contextAfterInterruption(llm: ScriptedLlm): { heardWords: string[] } {
  expect(llm.requests).toHaveLength(2);
  const messages = llm.requests[1]!.messages;
  expect(messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
  expect(messages[1]).toEqual({ role: 'user', content: QUESTION });
  // The caller's new words are a turn of their own, not glued onto the question.
  expect(messages[3]).toEqual({ role: 'user', content: INTERRUPTION });
  const heard = messages[2]!.content.replace(/…$/, '');
  const heardWords = words(heard);
  // Whole words, in order, from the start of the reply: never a word cut in the middle.
  expect(heardWords).toEqual(words(`${SENTENCE_ONE} ${SENTENCE_TWO}`).slice(0, heardWords.length));
  return { heardWords };
}

describe('an interruption keeps what the caller heard of the sentence being spoken', () => {
  it.each([300, 600])('cut %i ms into the first sentence: its heard words are the assistant turn', async (atMs) => {
    const { report, llm } = await interruptedCall(atMs);
    expect(report.outcome).toBe('completed');
    expect(report.metrics.utterances[1]!.bargeIn).toBe(true);
    const { heardWords } = contextAfterInterruption(llm);
    expect(heardWords.length).toBeGreaterThan(0);
    expect(heardWords.length).toBeLessThan(words(SENTENCE_ONE).length);
  });

  it.each([300, 600])(
    'cut %i ms into the second sentence: all of the first and the heard words of the second',
    async (intoMs) => {
      const { report, llm } = await interruptedCall(SENTENCE_ONE_MS + intoMs);
      expect(report.outcome).toBe('completed');
      expect(report.metrics.utterances[1]!.bargeIn).toBe(true);
      const { heardWords } = contextAfterInterruption(llm);
      expect(heardWords.length).toBeGreaterThan(words(SENTENCE_ONE).length);
      expect(heardWords.length).toBeLessThan(words(`${SENTENCE_ONE} ${SENTENCE_TWO}`).length);
    },
  );
});

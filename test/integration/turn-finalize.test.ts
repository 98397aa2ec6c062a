import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { DeepgramEmulator } from '../../src/tools/emulators/deepgram-emulator.js';
import { OpenAiEmulator } from '../../src/tools/emulators/openai-emulator.js';
import { readMulawFile } from '../../src/tools/simulator/clip-file.js';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { vendorCalls } from '../helpers/vendor-call.js';

/**
 * Every caller turn ends on Switchboard's VAD stop plus a Finalize to the STT, the first turn as
 * much as the later ones, even when the STT already sent a final earlier in the turn.
 *
 * The caller says the birch-canoe sentence twice, once per turn. It has a 300 ms pause after
 * "the birch", which the emulated Deepgram (endpointing=300) takes as an end of speech: it sends
 * a final for the first part in the middle of the turn, while the VAD (stop_secs 0.8) still
 * hears the caller. Deepgram's own end-of-speech is made slow (final 1.8 s after the silence
 * began), so a turn that waited for it would be told apart from one ended by Finalize; and
 * interim results are made rare, so no interim shows the words after the mid-turn final, as
 * happens with a real Deepgram when the caller's last words are short.
 */

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/audio/${name}`, import.meta.url));
/** Speech no code is tuned on (bench/held-apart-speech/README.md). */
const heldApart = (name: string) =>
  fileURLToPath(new URL(`../../bench/held-apart-speech/${name}.ulaw`, import.meta.url));
const LATENCIES = {
  sttFinalDelayMs: 1800,
  llmFirstTokenMs: 30,
  llmTokensPerSec: 200,
  ttsFirstByteMs: 30,
  ttsRealTimeFactor: 10,
};
/** Short: the caller hears it in real time before speaking, and it is not the subject. */
const GREETING = 'Hello.';

const startCall = vendorCalls();

describe('the end of a caller turn', () => {
  it('comes from VAD stop plus Finalize on the first turn and the later one, with the whole turn transcribed', async () => {
    const deepgram = new DeepgramEmulator({
      latencies: LATENCIES,
      transcripts: ['the birch', 'canoe slid', 'the smooth', 'planks'],
      interimIntervalMs: 60_000,
    });
    const openai = new OpenAiEmulator({
      latencies: LATENCIES,
      replies: [GREETING, 'Sure.', 'Right.', 'Okay.', 'Fine.'],
    });
    const cartesia = new CartesiaEmulator({ latencies: LATENCIES });
    const { wssUrl } = await startCall({ deepgram, openai, cartesia, instructions: 'You are a boat rental desk.' });

    const report = await runPhoneCall({
      target: { wssUrl },
      clips: { birch: { mulaw: await readMulawFile(fixture('A06_birch_canoe.ulaw')) } },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'birch' },
          { do: 'wait-bot-silence', ms: 600 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');

    const listen = deepgram.log.find((c) => c.path === 'listen')!;
    // Each turn had Deepgram's own final for its first part, mid-turn, and then a Finalize
    // whose answer carried the rest: the turn's last words came from Finalize, not endpointing.
    expect(listen.finals.filter((f) => f.transcript !== '')).toEqual([
      { transcript: 'the birch', fromFinalize: false, speechFinal: true },
      { transcript: 'canoe slid', fromFinalize: true, speechFinal: true },
      { transcript: 'the smooth', fromFinalize: false, speechFinal: true },
      { transcript: 'planks', fromFinalize: true, speechFinal: true },
    ]);
    expect(listen.finalizes).toBe(2);
    // One answer per turn, each to the whole turn: no part of a turn came late as a turn of its own.
    const userTurns = openai.requests.map(
      (r) => (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!,
    );
    expect(userTurns.slice(1)).toEqual([
      { role: 'user', content: 'the birch canoe slid' },
      { role: 'user', content: 'the smooth planks' },
    ]);
    expect(report.metrics.utterances.map((u) => u.bargeIn)).toEqual([false, false]);
  }, 60_000);

  it('comes at VAD stop with no Finalize when the STT already finalised every word (a caller who paused), as with the real Deepgram', async () => {
    // Deepgram answers Finalize only when speech not yet finalised is buffered. A caller who
    // interrupts with a list, pausing between items, has each item finalised by the vendor's
    // endpointing (300 ms) in the pauses and the last one in the silence after it, before the
    // VAD's stop (0.8 s): nothing is left for Finalize, and a turn waiting for its answer would
    // wait out its whole bound.
    const deepgram = new DeepgramEmulator({
      latencies: { ...LATENCIES, sttFinalDelayMs: 150 },
      transcripts: ['a table by the window', 'eggs', 'milk', 'some bread', 'two lemons', 'and more', 'and so on'],
    });
    const openai = new OpenAiEmulator({
      latencies: LATENCIES,
      replies: [GREETING, 'Let me check the tables we have for tonight, one moment please.', 'Noted.'],
    });
    const cartesia = new CartesiaEmulator({ latencies: { ...LATENCIES, ttsRealTimeFactor: 1 } });
    const { wssUrl } = await startCall({ deepgram, openai, cartesia, instructions: 'You are a restaurant.' });

    const report = await runPhoneCall({
      target: { wssUrl },
      clips: {
        question: { mulaw: await readMulawFile(heldApart('no_pauses_question')) },
        list: { mulaw: await readMulawFile(heldApart('pauses_list_short')) },
      },
      scenario: {
        steps: [
          { do: 'wait-bot-silence', ms: 600 },
          { do: 'play', clip: 'question' },
          { do: 'wait-bot-audio', thenMs: 700 },
          { do: 'play', clip: 'list' },
          { do: 'wait-bot-audio', timeoutMs: 20_000 },
          { do: 'wait-bot-silence', ms: 300 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');

    const listen = deepgram.log.find((c) => c.path === 'listen')!;
    const finals = listen.finals.filter((f) => f.transcript !== '');
    // Every word came from Deepgram's own endpointing, the list's items one by one.
    expect(finals.length).toBeGreaterThanOrEqual(3);
    expect(finals.every((f) => !f.fromFinalize && f.speechFinal)).toBe(true);
    // Nothing was left to finalise at either VAD stop, so nothing was asked.
    expect(listen.finalizes).toBe(0);
    // The list was one turn, answered whole: the interruption cut the answer, and nothing of the
    // list came late as a turn of its own.
    const userTurns = openai.requests.map(
      (r) => (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!,
    );
    expect(userTurns.slice(1)).toEqual([
      { role: 'user', content: finals[0]!.transcript },
      {
        role: 'user',
        content: finals
          .slice(1)
          .map((f) => f.transcript)
          .join(' '),
      },
    ]);
    expect(report.metrics.utterances.map((u) => u.bargeIn)).toEqual([false, true]);
  }, 60_000);

  it('comes from VAD stop plus Finalize on a first turn spoken while the STT handshake is still under way', async () => {
    // The caller speaks at once (no greeting): "go forward ten meters" is voiced until 2.34 s of
    // the clip, so Switchboard's VAD (stop_secs 0.3) ends the turn about 2.7 s into the call,
    // while Deepgram's handshake is answered only 3.3 s after it arrived. Deepgram's own
    // end-of-speech is made far later (10 s of silence for endpointing and for UtteranceEnd), so
    // a final that ended the turn by itself would not be marked from_finalize.
    const HANDSHAKE_DELAY_MS = 3300;
    const deepgram = new DeepgramEmulator({ latencies: LATENCIES, transcripts: ['go forward ten meters'] });
    deepgram.faults.next({ kind: 'delay', delayMs: HANDSHAKE_DELAY_MS }, { path: 'listen' });
    const openai = new OpenAiEmulator({ latencies: LATENCIES, replies: ['Going forward.'] });
    const cartesia = new CartesiaEmulator({ latencies: LATENCIES });
    const { wssUrl } = await startCall({
      deepgram,
      openai,
      cartesia,
      instructions: 'You are a robot.',
      greets: false,
      vadStopSecs: 0.3,
      serviceOptions: { deepgram: { endpointing: 10_000, utterance_end_ms: 10_000 } },
      // Reached by host name, as a real vendor is.
      byHostName: true,
    });

    const report = await runPhoneCall({
      target: { wssUrl },
      clips: { forward: { mulaw: await readMulawFile(fixture('A07_go_forward.ulaw')) } },
      scenario: {
        steps: [
          { do: 'play', clip: 'forward' },
          { do: 'wait-bot-audio', timeoutMs: 20_000 },
          { do: 'wait-bot-silence', ms: 300 },
        ],
      },
    });
    expect(report.outcome).toBe('completed');

    const listen = deepgram.log.find((c) => c.path === 'listen')!;
    expect(listen.delayedMs).toBe(HANDSHAKE_DELAY_MS);
    // The Finalize asked for while the socket opened went out with the audio before it, and its
    // answer (not Deepgram's own end-of-speech) carried the turn's words.
    expect(listen.messages[0]).toEqual({ type: 'Finalize' });
    expect(listen.finalizes).toBe(1);
    expect(listen.finals[0]).toEqual({ transcript: 'go forward ten meters', fromFinalize: true, speechFinal: true });
    const userTurns = openai.requests.map(
      (r) => (r.body as { messages: Array<{ role: string; content: string }> }).messages.at(-1)!,
    );
    expect(userTurns).toEqual([{ role: 'user', content: 'go forward ten meters' }]);
    expect(report.metrics.replyLatenciesMs).toHaveLength(1);
  }, 60_000);
});

import { describe, expect, it } from 'vitest';
import {
  DIAL_IN,
  DIAL_OUT,
  SCRIPT_TIMEOUT_MS,
  block,
  errorLogLines,
  explain,
  readmeWalkthroughs,
} from '../helpers/readme-walkthrough.js';

/**
 * The README's dial-in and dial-out walk-through, run as printed (test/helpers/readme-walkthrough.ts):
 * a file of its own so that it runs beside the quick start's (`readme-walkthroughs.test.ts`).
 */

const follow = readmeWalkthroughs();

describe('the README, executed', () => {
  it('dial-in with no carrier account, then dial-out', { timeout: SCRIPT_TIMEOUT_MS + 30_000 }, async () => {
    // The dial-out's simulated callee answers, listens, replies twice and hangs up after the script.
    const run = await follow([block(DIAL_IN).text, block(DIAL_OUT).text], /sandbox callee hung up/);
    const context = explain(run);
    expect(run.code, context).toBe(0);
    expect(errorLogLines(run.output), context).toEqual([]);
    // The example receiver checked the webhook's signature and started the bot for this call.
    expect(run.output, context).toMatch(/call from \+15555550100 to \+14155550123: bots\/start answered 200/);
    // The dial-in caller was put through to a bot that greeted and answered.
    expect(run.output, context).toMatch(/utterance 1 "A06_birch_canoe.8k": .*reply latency \d+ ms/);
    // The dialled callee heard the bot and got answers to both of its replies.
    expect(run.output, context).toMatch(
      /"calleeTurns":2,"replyLatenciesMs":\[\d+,\d+\],"msg":"sandbox callee hung up"/,
    );
  });
});

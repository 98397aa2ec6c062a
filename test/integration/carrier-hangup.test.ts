import { afterEach, expect, it } from 'vitest';
import { runPhoneCall } from '../../src/tools/simulator/phone-call.js';
import { startFakeTwilioRest } from '../fakes/fake-twilio-rest.js';
import { ScriptedLlm, ScriptedStt, ToneTts } from '../fakes/scripted-providers.js';
import { type CallServer, startCallServer } from '../helpers/call-server.js';
import { waitFor } from '../helpers/wait.js';

const SID = `AC${'e'.repeat(32)}`;
const AUTH_TOKEN = 'hangup-test-token';

const closers: Array<() => Promise<void>> = [];
let server: CallServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const close of closers.splice(0)) await close();
});

it('a call the bot ends (max_duration) is hung up at the carrier too: Calls/{CallSid} with Status=completed', async () => {
  const twilio = await startFakeTwilioRest(SID, AUTH_TOKEN);
  closers.push(twilio.close);
  server = await startCallServer(
    (registry) => {
      registry
        .registerStt('scripted_stt', () => new ScriptedStt([]))
        .registerLlm('scripted_llm', () => new ScriptedLlm({ replies: ['unused'] }))
        .registerTts('tone_tts', () => new ToneTts());
    },
    {
      SWITCHBOARD_CARRIER: 'twilio',
      TWILIO_ACCOUNT_SID: SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      SWITCHBOARD_TWILIO_URL: twilio.url,
    },
  );
  const { wssUrl } = await server.createConfig({
    services: { stt: 'scripted_stt', llm: 'scripted_llm', tts: 'tone_tts' },
    config: [],
    max_duration: 1,
  });
  const callSid = `CA${'7'.repeat(32)}`;
  const report = await runPhoneCall({
    target: { wssUrl },
    callSid,
    authToken: AUTH_TOKEN,
    // The server ends the call after its 1 s and the goodbye; the caller's own limit only stops a
    // call that never ends, well inside the test's time, so such a failure says so.
    scenario: { steps: [], endOfScript: 'stay', maxDurationMs: 20_000 },
  });

  expect(report.outcome).toBe('server-closed');
  // The hang-up request goes out after the stream closes; the carrier's SDK is slow to answer on a
  // loaded machine, so wait for the request itself rather than a short while.
  const hangUp = await waitFor(
    () => twilio.requests.find((r) => r.path.endsWith(`/Calls/${callSid}.json`)),
    30_000,
    'the hang-up request at the carrier',
  );
  expect(hangUp).toMatchObject({
    method: 'POST',
    path: `/2010-04-01/Accounts/${SID}/Calls/${callSid}.json`,
    form: { Status: 'completed' },
  });
}, 90_000);

import type { CallRecordView } from '../../src/records/call-record.js';
import { TEST_KEY } from './test-data.js';

/**
 * The record of the server's one ended call, as the API serves it, once the call's end has been
 * written (the caller may hang up a moment before the server notices): the server's own timings of
 * each turn, which a test can compare without the clock of the machine it runs on.
 */
export async function endedCallRecord(baseUrl: string, timeoutMs = 15_000): Promise<CallRecordView> {
  const headers = { authorization: `Bearer ${TEST_KEY}` };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = (await (await fetch(`${baseUrl}/v1/calls`, { headers })).json()) as {
      data: Array<{ id: string; status: string }>;
    };
    const ended = list.data.find((call) => call.status === 'ended');
    if (ended) return (await (await fetch(`${baseUrl}/v1/calls/${ended.id}`, { headers })).json()) as CallRecordView;
    if (Date.now() > deadline) throw new Error(`no ended call record within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

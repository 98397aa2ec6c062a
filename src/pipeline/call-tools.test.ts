import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { CallMetrics } from './call-metrics.js';
import { CallTools } from './call-tools.js';

const schema = (name: string) => ({ type: 'function', function: { name, parameters: { type: 'object' } } });

function callTools(webhookTools: Record<string, Record<string, unknown>>) {
  return new CallTools(
    { tools: [schema('book_table'), schema('check_hours')], webhookTools },
    {
      builtIn: () => undefined,
      metrics: new CallMetrics(),
      log: () => pino({ level: 'silent' }),
      callSignal: new AbortController().signal,
    },
  );
}

describe('which webhook answers a function', () => {
  it('its own webhook_tools entry, else the "*" entry, never the room client on a phone call', () => {
    const tools = callTools({
      book_table: { url: 'https://tools.example.com/book', say: 'Booking it now.' },
      '*': { url: 'https://tools.example.com/any' },
    });
    expect(tools.spec('book_table')).toMatchObject({ kind: 'webhook', say: 'Booking it now.' });
    expect(tools.spec('book_table')?.webhook?.url).toBe('https://tools.example.com/book');
    expect(tools.spec('check_hours')).toMatchObject({ kind: 'webhook' });
    expect(tools.spec('check_hours')?.webhook?.url).toBe('https://tools.example.com/any');
  });

  it('without a "*" entry, a function with no webhook is asked of the client', () => {
    const tools = callTools({ book_table: { url: 'https://tools.example.com/book' } });
    expect(tools.spec('check_hours')).toMatchObject({ kind: 'client' });
  });
});

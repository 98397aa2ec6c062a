import { describe, expect, it } from 'vitest';
import { parseEmulateArgs } from './emulate.js';
import { UsageError } from './usage.js';

describe('switchboard emulate: scripted replies', () => {
  it('keeps --reply and --reply-json in the order given, with the calls as the emulators take them', () => {
    const options = parseEmulateArgs([
      '--reply',
      'Hello.',
      '--reply-json',
      '{"text": "Let me look.", "tool_calls": [{"name": "a", "arguments": {"x": 1}}, {"name": "b"}]}',
      '--reply',
      'Bye.',
      '--after-tool-results',
      'Got {results}',
    ]);
    if (options === 'help') throw new Error('help');
    expect(options.replies).toEqual([
      'Hello.',
      {
        text: 'Let me look.',
        toolCalls: [
          { name: 'a', argumentsJson: '{"x":1}' },
          { name: 'b', argumentsJson: '{}' },
        ],
      },
      'Bye.',
    ]);
    expect(options.afterToolResults).toBe('Got {results}');
  });

  it('refuses a --reply-json that is not JSON, has unknown fields or says nothing', () => {
    expect(() => parseEmulateArgs(['--reply-json', '{nope'])).toThrow(UsageError);
    expect(() => parseEmulateArgs(['--reply-json', '{"tool_calls": [{"nam": "a"}]}'])).toThrow(/tool_calls\.0/);
    expect(() => parseEmulateArgs(['--reply-json', '{}'])).toThrow(/needs "text" or "tool_calls"/);
  });
});

import { describe, expect, it } from 'vitest';
import { buildSayHangupTwiml, buildStreamTwiml } from './twiml.js';

describe('TwiML builder', () => {
  it('builds a Connect/Stream document with parameters in order', () => {
    expect(buildStreamTwiml({ streamUrl: 'wss://h/ws/twilio/1', parameters: { a: '1', b: 'two' } })).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Connect><Stream url="wss://h/ws/twilio/1">' +
        '<Parameter name="a" value="1"/><Parameter name="b" value="two"/></Stream></Connect></Response>',
    );
  });

  it('escapes markup in values', () => {
    const xml = buildStreamTwiml({ streamUrl: 'wss://h/x?a=1&b=2', parameters: { n: '"<&>' } });
    expect(xml).toContain('url="wss://h/x?a=1&amp;b=2"');
    expect(xml).toContain('value="&quot;&lt;&amp;&gt;"');
    expect(buildSayHangupTwiml('a < b')).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><Response><Say>a &lt; b</Say><Hangup/></Response>',
    );
  });
});

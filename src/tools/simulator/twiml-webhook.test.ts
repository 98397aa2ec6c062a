import { describe, expect, it } from 'vitest';
import { buildStreamTwiml } from '../../telephony/twiml.js';
import { parseStreamTwiml } from './twiml-webhook.js';

describe('parseStreamTwiml', () => {
  it('reads the Stream url and Parameters of the TwiML the server builds', () => {
    const twiml = buildStreamTwiml({
      streamUrl: 'wss://bots.example/ws/twilio/cfg_1',
      parameters: { bot_id: 'abc', note: 'a & b <"c">' },
    });
    expect(parseStreamTwiml(twiml, 'https://bots.example/twilio/voice/cfg_1')).toEqual({
      url: 'wss://bots.example/ws/twilio/cfg_1',
      parameters: { bot_id: 'abc', note: 'a & b <"c">' },
      bidirectional: true,
    });
  });

  it('handles single quotes, self-closing Stream, <Start> and a relative url', () => {
    const twiml = `<?xml version="1.0"?><Response><Start><Stream url='/media' name='s1'/></Start><Pause length="5"/></Response>`;
    expect(parseStreamTwiml(twiml, 'http://127.0.0.1:9000/voice')).toEqual({
      url: 'ws://127.0.0.1:9000/media',
      parameters: {},
      bidirectional: false,
    });
  });

  it('returns null for TwiML without a stream', () => {
    expect(parseStreamTwiml('<Response><Say>Sorry.</Say><Hangup/></Response>', 'http://x/')).toBeNull();
  });
});

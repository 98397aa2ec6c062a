import twilio from 'twilio';
import { describe, expect, it } from 'vitest';
import { create } from 'xmlbuilder2';
import { STREAM_PARAM_CONFIG_ID, STREAM_PARAM_DOMAIN } from '../../src/bots/bot-config-service.js';
import { buildSayHangupTwiml, buildStreamTwiml } from '../../src/telephony/twiml.js';

/**
 * The TwiML Switchboard answers with, against what Twilio's own library (`twilio.twiml.
 * VoiceResponse`) writes for the same content: both parsed as XML and compared element by
 * element, attributes and text included, plus the XML declaration.
 */

interface XmlNode {
  name: string;
  attributes: Record<string, string>;
  text: string;
  children: XmlNode[];
}

/** The part of the DOM that xmlbuilder2's parser gives, as far as the comparison reads it. */
interface DomNode {
  nodeType: number;
  nodeName: string;
  nodeValue: string | null;
  childNodes: ArrayLike<DomNode>;
  attributes?: ArrayLike<{ name: string; value: string }>;
}

/** The document as a plain tree: element names, attributes, text, children in order. */
function parse(xml: string): { declaration: string; root: XmlNode } {
  const declaration = /^<\?xml[^?]*\?>/.exec(xml)?.[0] ?? '';
  const walk = (element: DomNode): XmlNode => {
    const attributes: Record<string, string> = {};
    for (const attribute of Array.from(element.attributes ?? [])) attributes[attribute.name] = attribute.value;
    const children: XmlNode[] = [];
    let text = '';
    for (const child of Array.from(element.childNodes)) {
      if (child.nodeType === 1) children.push(walk(child));
      else if (child.nodeType === 3 || child.nodeType === 4) text += child.nodeValue ?? '';
    }
    return { name: element.nodeName, attributes, text, children };
  };
  return { declaration, root: walk(create(xml).root().node as unknown as DomNode) };
}

/** Twilio's library's TwiML for a bidirectional stream with parameters. */
function twilioStream(url: string, parameters: Record<string, string>): string {
  const response = new twilio.twiml.VoiceResponse();
  const stream = response.connect().stream({ url });
  for (const [name, value] of Object.entries(parameters)) stream.parameter({ name, value });
  return response.toString();
}

function twilioSayHangup(message: string): string {
  const response = new twilio.twiml.VoiceResponse();
  response.say(message);
  response.hangup();
  return response.toString();
}

function expectSameTwiml(ours: string, theirs: string): void {
  const a = parse(ours);
  const b = parse(theirs);
  expect(a.declaration).toBe(b.declaration);
  expect(a.root).toEqual(b.root);
}

describe('TwiML compared with twilio.twiml.VoiceResponse', () => {
  const cases: Array<{ what: string; url: string; parameters: Record<string, string> }> = [
    {
      what: 'a configuration (as created and served by the voice webhook with the call details)',
      url: 'wss://bots.example.com/ws/twilio/0b7f6c1e-4a5d-4c8e-9f0a-1b2c3d4e5f60',
      parameters: {
        [STREAM_PARAM_CONFIG_ID]: '0b7f6c1e-4a5d-4c8e-9f0a-1b2c3d4e5f60',
        [STREAM_PARAM_DOMAIN]: 'dom_1234',
        from: '+15550100001',
        to: '+15550100002',
        callsid: 'CA0123456789abcdef0123456789abcdef',
      },
    },
    {
      what: 'a dial-in call on hold',
      url: 'wss://bots.example.com/ws/dialin/call_42',
      parameters: { callId: 'call_42', from: '+15550100003', to: '+15550100004' },
    },
    {
      what: 'an answered dial-out leg',
      url: 'wss://bots.example.com/ws/dialout/leg_7',
      parameters: { legId: 'leg_7', room: 'room-abc' },
    },
    {
      what: 'values that need escaping and non-ASCII text',
      url: 'ws://localhost:8080/ws/twilio/x?a=1&b="2"',
      parameters: { note: `"quoted" & <tagged> 'single'`, name: 'Zoë ☎ 日本', empty: '' },
    },
  ];

  for (const { what, url, parameters } of cases) {
    it(`<Connect><Stream> with <Parameter>s: ${what}`, () => {
      // Not compared as bytes: the two writers differ in whether a '>' in an attribute is escaped.
      expectSameTwiml(buildStreamTwiml({ streamUrl: url, parameters }), twilioStream(url, parameters));
    });
  }

  for (const message of [
    'This request could not be verified.',
    'This number is not connected to an assistant.',
    'Sorry, this call is no longer needed. Goodbye.',
    'This bot is not available.',
    'Tom & Jerry said "a < b" — café',
  ]) {
    it(`<Say> then <Hangup>: ${JSON.stringify(message)}`, () => {
      expectSameTwiml(buildSayHangupTwiml(message), twilioSayHangup(message));
    });
  }

  it('a difference in structure is caught (the comparison can fail)', () => {
    const url = 'wss://bots.example.com/ws/twilio/1';
    expect(() =>
      expectSameTwiml(buildStreamTwiml({ streamUrl: url, parameters: { a: '1' } }), twilioStream(url, { a: '2' })),
    ).toThrow();
    expect(() =>
      expectSameTwiml(
        buildStreamTwiml({ streamUrl: url, parameters: { a: '1', b: '2' } }),
        twilioStream(url, { b: '2', a: '1' }),
      ),
    ).toThrow();
    expect(() =>
      expectSameTwiml(buildSayHangupTwiml('bye'), new twilio.twiml.VoiceResponse().say('bye').toString()),
    ).toThrow();
  });
});

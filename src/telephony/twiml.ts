import { createRequire } from 'node:module';

type XmlBuilder = typeof import('xmlbuilder2');

let xmlBuilder: XmlBuilder | undefined;

/**
 * xmlbuilder2, loaded on first use: about 3 MB of an idle server's memory that nobody has set up
 * for calls (docs/cost-per-call.md). Loaded synchronously (it is CommonJS, about 50 ms) so that
 * the builders stay synchronous; warmCallParts loads it once calls may come, so a call's webhook
 * does not wait for it.
 */
export function loadTwimlBuilder(): XmlBuilder {
  xmlBuilder ??= createRequire(import.meta.url)('xmlbuilder2') as XmlBuilder;
  return xmlBuilder;
}

function newDocument() {
  return loadTwimlBuilder().create({ version: '1.0', encoding: 'UTF-8' });
}

export interface StreamTwimlOptions {
  /** The media websocket (wss:// in production). Query strings are dropped by the carrier, so none. */
  streamUrl: string;
  /** Passed as <Parameter> pairs; they arrive in the stream's start.customParameters. */
  parameters: Record<string, string>;
}

/** `<Response><Connect><Stream url=…><Parameter …/></Stream></Connect></Response>` */
export function buildStreamTwiml({ streamUrl, parameters }: StreamTwimlOptions): string {
  const doc = newDocument();
  const stream = doc.ele('Response').ele('Connect').ele('Stream', { url: streamUrl });
  for (const [name, value] of Object.entries(parameters)) {
    stream.ele('Parameter', { name, value });
  }
  return doc.end({ prettyPrint: false });
}

/** Spoken to a caller whose number or configuration cannot be served, then the call ends. */
export function buildSayHangupTwiml(message: string): string {
  const doc = newDocument();
  const response = doc.ele('Response');
  response.ele('Say').txt(message);
  response.ele('Hangup');
  return doc.end({ prettyPrint: false });
}

/** A cold transfer: `<Response><Dial><Number>…</Number></Dial></Response>` (or `<Sip>` for a SIP address). */
export function buildTransferTwiml(target: string): string {
  const doc = newDocument();
  const dial = doc.ele('Response').ele('Dial');
  if (/^sips?:/.test(target)) dial.ele('Sip').txt(target);
  else dial.ele('Number').txt(target);
  return doc.end({ prettyPrint: false });
}

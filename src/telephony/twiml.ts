import { create } from 'xmlbuilder2';

export interface StreamTwimlOptions {
  /** The media websocket (wss:// in production). Query strings are dropped by the carrier, so none. */
  streamUrl: string;
  /** Passed as <Parameter> pairs; they arrive in the stream's start.customParameters. */
  parameters: Record<string, string>;
}

/** `<Response><Connect><Stream url=…><Parameter …/></Stream></Connect></Response>` */
export function buildStreamTwiml({ streamUrl, parameters }: StreamTwimlOptions): string {
  const doc = create({ version: '1.0', encoding: 'UTF-8' });
  const stream = doc.ele('Response').ele('Connect').ele('Stream', { url: streamUrl });
  for (const [name, value] of Object.entries(parameters)) {
    stream.ele('Parameter', { name, value });
  }
  return doc.end({ prettyPrint: false });
}

/** Spoken to a caller whose number or configuration cannot be served, then the call ends. */
export function buildSayHangupTwiml(message: string): string {
  const doc = create({ version: '1.0', encoding: 'UTF-8' });
  const response = doc.ele('Response');
  response.ele('Say').txt(message);
  response.ele('Hangup');
  return doc.end({ prettyPrint: false });
}

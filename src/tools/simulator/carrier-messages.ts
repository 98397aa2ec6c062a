/**
 * What the carrier sends on a media stream, field for field as Twilio does (numbers as strings,
 * streamSid last). Built by string concatenation because one goes out every 20 ms per call;
 * twilio-messages.ts's inbound schemas check these shapes in the tests.
 */

export interface StreamIdentity {
  accountSid: string;
  callSid: string;
  streamSid: string;
}

/** `sequenceNumber` starts at "1" (the start message) and counts every message after `connected`. */
export class CarrierMessages {
  private sequence = 0;
  private readonly sidJson: string;

  constructor(private readonly ids: StreamIdentity) {
    this.sidJson = JSON.stringify(ids.streamSid);
  }

  connected(): string {
    return '{"event":"connected","protocol":"Call","version":"1.0.0"}';
  }

  start(customParameters: Record<string, string>): string {
    return JSON.stringify({
      event: 'start',
      sequenceNumber: this.next(),
      start: {
        accountSid: this.ids.accountSid,
        streamSid: this.ids.streamSid,
        callSid: this.ids.callSid,
        tracks: ['inbound'],
        customParameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
      streamSid: this.ids.streamSid,
    });
  }

  /** `chunk` counts media frames from 1; `timestampMs` is ms since stream start. */
  media(chunk: number, timestampMs: number, payloadBase64: string): string {
    return `{"event":"media","sequenceNumber":"${this.next()}","media":{"track":"inbound","chunk":"${chunk}","timestamp":"${timestampMs}","payload":"${payloadBase64}"},"streamSid":${this.sidJson}}`;
  }

  mark(name: string): string {
    return `{"event":"mark","sequenceNumber":"${this.next()}","streamSid":${this.sidJson},"mark":{"name":${JSON.stringify(name)}}}`;
  }

  dtmf(digit: string): string {
    return `{"event":"dtmf","streamSid":${this.sidJson},"sequenceNumber":"${this.next()}","dtmf":{"track":"inbound_track","digit":${JSON.stringify(digit)}}}`;
  }

  stop(): string {
    return JSON.stringify({
      event: 'stop',
      sequenceNumber: this.next(),
      stop: { accountSid: this.ids.accountSid, callSid: this.ids.callSid },
      streamSid: this.ids.streamSid,
    });
  }

  private next(): string {
    this.sequence += 1;
    return String(this.sequence);
  }
}

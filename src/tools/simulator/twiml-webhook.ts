/**
 * The carrier's first move on an inbound call: POST the voice webhook, read the TwiML back, and
 * find the media stream to open. The TwiML our server (and any sane one) returns is small and
 * well formed, so a few regular expressions stand in for an XML parser.
 */

export interface StreamInstruction {
  /** ws:// or wss:// URL of the media stream (a relative url is resolved against the webhook). */
  url: string;
  /** `<Parameter name value>` pairs; they travel in start.customParameters. */
  parameters: Record<string, string>;
  /** `<Connect><Stream>` is bidirectional; `<Start><Stream>` only forks audio and ignores bot media. */
  bidirectional: boolean;
}

/** The webhook did not lead to a media stream; `twiml` holds the body, if any, for the report. */
export class WebhookError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly twiml?: string,
  ) {
    super(message);
    this.name = 'WebhookError';
  }
}

export interface WebhookRequest {
  webhookUrl: string;
  /** Form fields, as the carrier sends them (CallSid, AccountSid, From, To, ...). */
  form: Record<string, string>;
  /** When set, the request carries an X-Twilio-Signature made with it. */
  authToken?: string;
  timeoutMs: number;
  signal?: AbortSignal;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') {
      const code =
        entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10);
      return Number.isFinite(code) ? String.fromCodePoint(code) : whole;
    }
    return ENTITIES[entity.toLowerCase()] ?? whole;
  });
}

function attributes(tagBody: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const match of tagBody.matchAll(/([A-Za-z_][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    out[match[1]!] = decodeEntities(match[2] ?? match[3] ?? '');
  }
  return out;
}

/** `http(s)://` to `ws(s)://`, so a relative Stream url on an http webhook still dials a socket. */
function toWebSocketUrl(url: URL): string {
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  return url.toString();
}

/** The first `<Stream>` of a TwiML document, or null when there is none (e.g. `<Say>` + `<Hangup>`). */
export function parseStreamTwiml(twiml: string, baseUrl: string): StreamInstruction | null {
  const open = /<Stream\b([^>]*?)(\/?)>/.exec(twiml);
  if (!open) return null;
  const attrs = attributes(open[1]!);
  if (!attrs.url) return null;
  let body = '';
  if (open[2] !== '/') {
    const bodyStart = open.index + open[0].length;
    const close = twiml.indexOf('</Stream>', bodyStart);
    body = twiml.slice(bodyStart, close < 0 ? twiml.length : close);
  }
  const parameters: Record<string, string> = {};
  for (const match of body.matchAll(/<Parameter\b([^>]*?)\/?>/g)) {
    const p = attributes(match[1]!);
    if (p.name !== undefined) parameters[p.name] = p.value ?? '';
  }
  const before = twiml.slice(0, open.index);
  return {
    url: toWebSocketUrl(new URL(attrs.url, baseUrl)),
    parameters,
    bidirectional: before.lastIndexOf('<Connect') > before.lastIndexOf('<Start'),
  };
}

/** What a `<Say>` in a stream-less answer said, to explain the failure. */
function spokenText(twiml: string): string | undefined {
  const say = /<Say\b[^>]*>([\s\S]*?)<\/Say>/.exec(twiml);
  return say ? decodeEntities(say[1]!.trim()) : undefined;
}

/** The carrier signs webhooks with the account's auth token; loaded only when asked for. */
export async function signatureFor(authToken: string, url: string, params: Record<string, string>): Promise<string> {
  const { twilioSignatureFor } = await import('../../telephony/twilio-signature.js');
  return twilioSignatureFor(authToken, url, params);
}

/** POSTs the voice webhook and returns the stream to open; throws WebhookError otherwise. */
export async function fetchStreamInstruction(request: WebhookRequest): Promise<StreamInstruction> {
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'text/xml, application/xml',
    'user-agent': 'TwilioProxy/1.1 (switchboard phone simulator)',
  };
  if (request.authToken)
    headers['x-twilio-signature'] = await signatureFor(request.authToken, request.webhookUrl, request.form);
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(request.webhookUrl, {
      method: 'POST',
      headers,
      body: new URLSearchParams(request.form).toString(),
      signal,
    });
  } catch (err) {
    const why = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    throw new WebhookError(`webhook ${request.webhookUrl} failed: ${why}`);
  }
  const body = await response.text();
  const instruction = response.ok ? parseStreamTwiml(body, request.webhookUrl) : null;
  if (!instruction) {
    const said = spokenText(body);
    const what = response.ok ? 'TwiML has no <Stream url>' : `HTTP ${response.status}`;
    throw new WebhookError(
      `webhook answered ${what}${said ? ` (says "${said}")` : ''}`,
      response.status,
      body.slice(0, 2000),
    );
  }
  return instruction;
}

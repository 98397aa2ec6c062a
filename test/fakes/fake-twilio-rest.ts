import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as the fake saw it: method, path, query and form body. */
export interface RecordedTwilioRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  form: Record<string, string>;
  /** Every value of a repeated form field (Twilio's lists, e.g. StatusCallbackEvent), in order. */
  formLists: Record<string, string[]>;
  /** The Basic credentials' user part (the account sid). */
  user: string | undefined;
}

const AVAILABLE = [
  {
    phone_number: '+14155550100',
    friendly_name: '(415) 555-0100',
    locality: 'San Francisco',
    region: 'CA',
    iso_country: 'US',
  },
  {
    phone_number: '+14155550142',
    friendly_name: '(415) 555-0142',
    locality: 'San Francisco',
    region: 'CA',
    iso_country: 'US',
  },
  {
    phone_number: '+14155554299',
    friendly_name: '(415) 555-4299',
    locality: 'Oakland',
    region: 'CA',
    iso_country: 'US',
  },
];

/**
 * Twilio's REST API for numbers, as much as the carrier uses: AvailablePhoneNumbers/{country}/Local
 * (GET, JSON list in Twilio's envelope), IncomingPhoneNumbers (POST form → 201 with the resource),
 * IncomingPhoneNumbers/{sid} (DELETE → 204, or 404 with Twilio's error JSON), Calls (POST form →
 * 201 with a queued call) and Calls/{sid} (POST Status → 200, or 404). Checks Basic auth.
 */
export async function startFakeTwilioRest(
  accountSid: string,
  authToken: string,
): Promise<{
  url: string;
  requests: RecordedTwilioRequest[];
  /** A call Twilio has live (one that called in): Calls/{sid} updates then find it. */
  addLiveCall(callSid: string): void;
  close(): Promise<void>;
}> {
  const requests: RecordedTwilioRequest[] = [];
  const owned = new Map<string, string>();
  const calls = new Map<string, string>();
  let nextSid = 1;
  const server: Server = createServer((req, res) => {
    void readForm(req).then(({ form, formLists }) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const [user, password] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
        .toString()
        .split(':');
      requests.push({
        method: req.method ?? '',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        form,
        formLists,
        user,
      });
      const send = (status: number, body?: unknown) => {
        res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (user !== accountSid || password !== authToken)
        return send(401, { code: 20003, message: 'Authenticate', status: 401 });
      const base = `/2010-04-01/Accounts/${accountSid}`;
      if (req.method === 'GET' && url.pathname === `${base}/AvailablePhoneNumbers/US/Local.json`) {
        const areaCode = url.searchParams.get('AreaCode');
        const contains = url.searchParams.get('Contains');
        const found = AVAILABLE.filter(
          (n) =>
            (!areaCode || n.phone_number.startsWith(`+1${areaCode}`)) &&
            (!contains || n.phone_number.includes(contains)),
        );
        return send(200, {
          available_phone_numbers: found,
          uri: url.pathname,
          end: found.length - 1,
          first_page_uri: url.pathname,
          next_page_uri: null,
          page: 0,
          page_size: 50,
          previous_page_uri: null,
          start: 0,
        });
      }
      if (req.method === 'POST' && url.pathname === `${base}/IncomingPhoneNumbers.json`) {
        const sid = `PN${String(nextSid++).padStart(32, '0')}`;
        owned.set(sid, form.PhoneNumber ?? '');
        return send(201, {
          sid,
          account_sid: accountSid,
          phone_number: form.PhoneNumber,
          voice_url: form.VoiceUrl,
          voice_method: form.VoiceMethod,
        });
      }
      const release = new RegExp(`^${base}/IncomingPhoneNumbers/(PN\\w+)\\.json$`).exec(url.pathname);
      if (req.method === 'DELETE' && release) {
        if (!owned.delete(release[1]!))
          return send(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
        return send(204);
      }
      if (req.method === 'POST' && url.pathname === `${base}/Calls.json`) {
        const sid = `CA${String(nextSid++).padStart(32, '0')}`;
        calls.set(sid, 'queued');
        return send(201, {
          sid,
          account_sid: accountSid,
          to: form.To,
          from: form.From,
          status: 'queued',
          direction: 'outbound-api',
          uri: `${base}/Calls/${sid}.json`,
        });
      }
      const update = new RegExp(`^${base}/Calls/(CA\\w+)\\.json$`).exec(url.pathname);
      if (req.method === 'POST' && update) {
        if (!calls.has(update[1]!))
          return send(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
        // New TwiML (a transfer's <Dial>) redirects the live call; a Status ends it.
        calls.set(update[1]!, form.Status ?? (form.Twiml ? 'in-progress' : 'unknown'));
        return send(200, { sid: update[1], account_sid: accountSid, status: form.Status ?? 'in-progress' });
      }
      send(404, { code: 20404, message: `no route ${req.method} ${url.pathname}`, status: 404 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    addLiveCall: (callSid: string) => void calls.set(callSid, 'in-progress'),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function readForm(
  req: IncomingMessage,
): Promise<{ form: Record<string, string>; formLists: Record<string, string[]> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const params = new URLSearchParams(Buffer.concat(chunks).toString());
  const formLists: Record<string, string[]> = {};
  for (const [key, value] of params) {
    formLists[key] ??= [];
    formLists[key].push(value);
  }
  return { form: Object.fromEntries(params), formLists };
}

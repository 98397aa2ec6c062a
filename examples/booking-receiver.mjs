/**
 * An example function receiver: a bot's `book_table` function, answered by a restaurant's own
 * server. Switchboard POSTs {function_name, tool_call_id, arguments} here when the model calls the
 * function; this checks the request's signature, books the table and answers with JSON, which the
 * model reads as the function's result. No dependencies: Node 20 or later.
 *
 *   WEBHOOK_SECRET=<the configuration's webhook_secret> PORT=3000 node examples/booking-receiver.mjs
 *
 * Then list it in a configuration:
 *   "webhook_tools": {"book_table": {"url": "http://localhost:3000/book", "say": "Let me check the book."}}
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const secret = process.env.WEBHOOK_SECRET ?? '';
const port = Number(process.env.PORT ?? 3000);
/** Requests signed longer ago than this are refused, so a recorded request cannot be replayed. */
const TOLERANCE_SECS = 300;
const MAX_BODY_BYTES = 64 * 1024;

if (!secret) {
  console.error("set WEBHOOK_SECRET to the configuration's webhook_secret");
  process.exit(2);
}

/**
 * `X-Switchboard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, keyed with the secret's UTF-8
 * bytes, over `<t>.<body>`.
 */
function signatureValid(header, body) {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header ?? '');
  if (!match) return false;
  const timestampSecs = Number(match[1]);
  if (Math.abs(Date.now() / 1000 - timestampSecs) > TOLERANCE_SECS) return false;
  const expected = createHmac('sha256', secret).update(`${timestampSecs}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(match[2], 'hex'));
}

/** The restaurant's book: tables booked so far, by tool_call_id (a retried request books nothing twice). */
const bookings = new Map();

function book(args) {
  const party = Number(args.party);
  if (!Number.isInteger(party) || party < 1 || party > 12) return { error: 'party must be 1 to 12 people' };
  if (typeof args.time !== 'string' || !/^\d\d:\d\d$/.test(args.time)) return { error: 'time must be HH:MM' };
  const name = typeof args.name === 'string' && args.name.trim() ? args.name.trim() : 'guest';
  return { booked: true, party, time: args.time, name, reference: `T${1000 + bookings.size + 1}` };
}

function answer(res, status, json) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
}

createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/book') return answer(res, 404, { error: 'POST /book' });
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) req.destroy();
    else chunks.push(chunk);
  });
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    if (!signatureValid(req.headers['x-switchboard-signature'], body)) {
      console.log('refused a request with a bad or missing signature');
      return answer(res, 401, { error: 'bad signature' });
    }
    let request;
    try {
      request = JSON.parse(body);
    } catch {
      return answer(res, 400, { error: 'the body is not JSON' });
    }
    const { tool_call_id: id, arguments: args } = request;
    if (!bookings.has(id)) bookings.set(id, book(args ?? {}));
    const result = bookings.get(id);
    if (result.booked) console.log(`booked ${result.reference}: ${result.party} at ${result.time} for ${result.name}`);
    else console.log(`refused a booking: ${result.error}`);
    answer(res, 200, result);
  });
}).listen(port, () => console.log(`booking receiver listening on http://localhost:${port}/book`));

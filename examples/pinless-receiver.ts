/**
 * An example customer server for pinless dial-in: Switchboard POSTs here when someone calls one of
 * your numbers; this checks the signature and starts a bot for that call with POST /v1/bots/start.
 *
 *   SWITCHBOARD_URL=http://localhost:8080 SWITCHBOARD_API_KEY=sb_... PINLESS_HMAC=<base64 secret> \
 *     npx tsx examples/pinless-receiver.ts
 *
 * Then set it as the number's room_creation_api (POST /v1/ with properties.pinless_dialin), with
 * the same hmac, and place a call: `npx switchboard call --url http://localhost:8080/twilio/voice --to <number>`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const switchboard = process.env.SWITCHBOARD_URL ?? 'http://localhost:8080';
const apiKey = process.env.SWITCHBOARD_API_KEY ?? '';
const secret = process.env.PINLESS_HMAC ?? '';
const port = Number(process.env.PORT ?? 3000);

/** The bot each caller talks to; any start-bot body works here. */
const BOT = {
  bot_profile: 'voice_2024_10',
  services: { stt: 'deepgram', llm: 'openai', tts: 'cartesia' },
  config: [
    {
      service: 'llm',
      options: [
        {
          name: 'initial_messages',
          value: [{ role: 'system', content: 'You are a friendly receptionist. Keep answers short.' }],
        },
        { name: 'run_on_config', value: true },
      ],
    },
  ],
};

function signatureValid(timestamp: string | undefined, signature: string | undefined, body: string): boolean {
  if (!secret || !timestamp || !signature) return false;
  const expected = createHmac('sha256', Buffer.from(secret, 'base64')).update(`${timestamp}.${body}`).digest();
  const given = Buffer.from(signature, 'base64');
  // Reject stale requests: the timestamp is Unix seconds (milliseconds are accepted too).
  const seconds = Number(timestamp) > 1e12 ? Number(timestamp) / 1000 : Number(timestamp);
  return (
    given.length === expected.length && timingSafeEqual(given, expected) && Math.abs(Date.now() / 1000 - seconds) < 300
  );
}

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks).toString();
    if (
      !signatureValid(
        req.headers['x-pinless-timestamp'] as string | undefined,
        req.headers['x-pinless-signature'] as string | undefined,
        raw,
      )
    ) {
      res.writeHead(401).end();
      return;
    }
    const event = JSON.parse(raw) as {
      To?: string;
      From?: string;
      callId?: string;
      callDomain?: string;
      test?: boolean;
    };
    // Answer at once: the caller is on hold until the bot joins.
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'OK' }));
    if (event.test || !event.callId) return;
    void fetch(`${switchboard}/v1/bots/start`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...BOT, dialin_settings: { callId: event.callId, callDomain: event.callDomain } }),
    }).then(
      async (r) =>
        console.log(`call from ${event.From} to ${event.To}: bots/start answered ${r.status} ${await r.text()}`),
      (err: unknown) => console.error('bots/start failed', err),
    );
  });
}).listen(port, () => console.log(`pinless receiver on http://localhost:${port}`));

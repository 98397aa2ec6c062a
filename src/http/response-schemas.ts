import { z } from 'zod';

/**
 * What the API answers, as zod schemas: the routes declare them, every JSON answer is checked
 * against them before it is sent, and /openapi.json is generated from them.
 */

export const storedTelephonyConfig = z.object({
  id: z.string(),
  wssUrl: z.string().describe('media websocket for this configuration'),
  domain: z.string().describe('the owning account'),
  twiml: z.string().describe('<Response><Connect><Stream> document'),
  botConfig: z.record(z.string(), z.unknown()).describe('the stored body, provider keys masked'),
});

export const deletedConfig = z.object({ deleted: z.literal(true), id: z.string() });

export const startedBot = z.union([
  z.object({
    room_url: z.string(),
    token: z.string(),
    webhook_secret: z
      .string()
      .optional()
      .describe(
        "signs this bot's webhook_tools requests; present when the request had webhook_tools and no webhook_secret",
      ),
  }),
  z.object({ ws_url: z.string() }).describe('with "transport": "websocket"'),
  z
    .object({
      webrtcRequestParams: z.object({ endpoint: z.string() }),
      iceConfig: z.object({
        iceServers: z.array(
          z.object({
            urls: z.union([z.string(), z.array(z.string())]),
            username: z.string().optional(),
            credential: z.string().optional(),
          }),
        ),
      }),
      webhook_secret: z.string().optional().describe('as for room_url'),
    })
    .describe('with "transport": "webrtc"'),
]);

export const availableNumbers = z.object({
  total_count: z.number().int(),
  data: z.array(z.object({ number: z.string(), region: z.string(), city: z.string() })),
});

export const boughtNumber = z.object({ id: z.string(), number: z.string() });

export const purchasedNumbers = z.object({
  total_count: z.number().int(),
  data: z.array(
    z.object({
      id: z.string(),
      name: z.string().nullable(),
      type: z.literal('purchased_phone_number'),
      pagination_id: z.string(),
      created_date: z.string(),
      number: z.string(),
      region: z.string(),
      status: z.literal('verified'),
      verified: z.literal(true),
    }),
  ),
});

export const releasedNumber = z.object({ id: z.string(), number: z.string(), released: z.literal(true) });

export const domainView = z.object({
  domain_name: z.string(),
  domain_id: z.string(),
  config: z.object({
    pinless_dialin: z.array(
      z.object({
        phone_number: z.string().optional(),
        room_creation_api: z.string(),
        name_prefix: z.string().optional(),
        hmac: z.string(),
        hold_music_url: z.string().optional(),
        timeout_config: z.object({ message: z.string().optional() }).optional(),
        sip_uri: z.string(),
      }),
    ),
  }),
});

export const recording = z.object({
  id: z.string(),
  room_name: z.string(),
  start_ts: z.number().describe('Unix seconds'),
  status: z.string(),
  max_participants: z.number().int(),
  duration: z.number().optional().describe('whole seconds; absent while in progress'),
  share_token: z.string().nullable(),
  s3key: z.string(),
  mtgSessionId: z.string(),
  tracks: z
    .array(
      z.object({
        name: z.enum(['caller', 'bot', 'mixed']),
        type: z.literal('audio'),
        s3Key: z.string(),
        size: z.number().int(),
        duration_ms: z.number(),
      }),
    )
    .nullable(),
  isVttEnabled: z.boolean().describe('the call has a transcript: WebVTT at vtt_url'),
  call_id: z.string().optional().describe('the call record, when it has a transcript'),
  vtt_url: z.string().optional().describe('the transcript as WebVTT (GET, with the API key)'),
});

export const recordings = z.object({ total_count: z.number().int(), data: z.array(recording) });

export const accessLink = z.object({ download_link: z.string(), expires: z.number().int().describe('Unix seconds') });

/** A TwiML answer to the carrier (a string: not checked, only documented). */
export const twimlResponse = (description: string) => ({
  description,
  content: { 'text/xml': { schema: z.string() } },
});

/** An answer without a body (a 204). */
export const noBody = (description: string) => z.null().describe(description);

import { z } from 'zod';

/** Thrown when the environment does not satisfy the contract; the message names each bad variable. */
export class EnvError extends Error {
  override name = 'EnvError';
}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const httpOrigin = z
  .string()
  .url()
  .refine((value) => /^https?:\/\//i.test(value), 'must be an http:// or https:// URL');

const port = z.coerce.number().int().min(0).max(65535);

/** A shared signing or sealing key: 32 random bytes in base64, as `openssl rand -base64 32` prints. */
const serviceKey = z
  .string()
  .refine(
    (value) => /^[A-Za-z0-9+/]+=*$/.test(value) && Buffer.from(value, 'base64').length === 32,
    'must be 32 bytes in base64 (openssl rand -base64 32)',
  )
  .transform((value) => Buffer.from(value, 'base64'));

/**
 * SWITCHBOARD_SECRET_KEY: one key, or while it is being rotated the new and the old one,
 * comma-separated (the node opens values sealed with either; see security/key-rotation.ts).
 */
const secretKeys = z
  .string()
  .refine((value) => {
    const keys = value.split(',').map((key) => key.trim());
    return keys.length <= 2 && keys.every((key) => serviceKey.safeParse(key).success);
  }, 'must be 32 bytes in base64 (openssl rand -base64 32), or while it is rotated the new and the old key, comma-separated')
  .transform((value) => value.split(',').map((key) => Buffer.from(key.trim(), 'base64')));

/** What DATABASE_URL (and `db copy --to`) accepts: a PostgreSQL connection URL. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\/[^/]/i.test(value) && URL.canParse(value);
}

const postgresUrl = z
  .string()
  .refine(isPostgresUrl, 'must be a postgres:// or postgresql:// URL (unset it for the embedded SQLite store)');

const envSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  SWITCHBOARD_PUBLIC_URL: httpOrigin.optional(),
  SWITCHBOARD_DATA_DIR: z.string().min(1).default('./data'),
  SWITCHBOARD_API_KEY: z.string().optional(),
  SWITCHBOARD_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  DATABASE_URL: postgresUrl.optional(),
  SWITCHBOARD_SECRET_KEY: secretKeys.optional(),
  SWITCHBOARD_LINK_SIGNING_KEY: serviceKey.optional(),
  SWITCHBOARD_ROOM_TOKEN_KEY: serviceKey.optional(),
  REDIS_URL: z
    .string()
    .refine(
      (value) => /^rediss?:\/\/./i.test(value) && URL.canParse(value),
      'must be a redis:// or rediss:// URL (unset it for a single node)',
    )
    .optional(),
  SWITCHBOARD_NODE_URL: httpOrigin.optional(),
  SWITCHBOARD_NODE_TIMEOUT_SECS: z.coerce.number().min(0.5).max(60).default(5),
  SWITCHBOARD_ACCOUNT_MAX_CALLS: z.coerce.number().int().min(1).max(100_000).optional(),
  TWILIO_ACCOUNT_SID: z.string().optional(),
  TWILIO_AUTH_TOKEN: z.string().optional(),
  LOG_LEVEL: z.enum(logLevels).default('info'),
  SWITCHBOARD_METRICS_TOKEN: z.string().optional(),
  SWITCHBOARD_CARRIER: z.enum(['sandbox', 'twilio']).default('sandbox'),
  SWITCHBOARD_WEBHOOK_ALLOW_LINK_LOCAL: z.enum(['true', 'false']).default('false'),
  SWITCHBOARD_GIVE_BACK_MEMORY: z.enum(['true', 'false']).default('false'),
  // Read by the provider adapters from the raw environment (see providers/endpoint.ts); checked here.
  SWITCHBOARD_PROVIDER_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS: z.coerce.number().int().min(5).max(600).default(60),
  SWITCHBOARD_DIALOUT_RING_TIMEOUT_SECS: z.coerce.number().int().min(5).max(600).default(30),
  SWITCHBOARD_MAX_ROOMS: z.coerce.number().int().min(1).max(10_000).default(100),
  SWITCHBOARD_ROOM_MAX_PARTICIPANTS: z.coerce.number().int().min(1).max(64).default(4),
  SWITCHBOARD_ROOM_JOIN_TIMEOUT_SECS: z.coerce.number().int().min(5).max(86_400).default(300),
  SWITCHBOARD_ROOM_EMPTY_GRACE_SECS: z.coerce.number().int().min(0).max(3600).default(10),
  SWITCHBOARD_ROOM_IDLE_TIMEOUT_SECS: z.coerce.number().int().min(10).max(86_400).default(300),
  SWITCHBOARD_TURN_DEADLINE_SECS: z.coerce.number().min(1).max(60).default(8),
  SWITCHBOARD_CALL_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  SWITCHBOARD_DRAIN_TIMEOUT_SECS: z.coerce.number().int().min(0).max(3600).default(30),
  SWITCHBOARD_WEBRTC_PUBLIC_IP: z.ipv4({ error: 'must be an IPv4 address, e.g. 203.0.113.7' }).optional(),
  SWITCHBOARD_WEBRTC_UDP_PORTS: z
    .string()
    .regex(/^\d{1,5}-\d{1,5}$/, 'must be a range such as 40000-40999')
    .transform((value) => value.split('-').map(Number) as [number, number])
    .refine(([min, max]) => min >= 1024 && max <= 65535 && min < max, 'must be low-high within 1024-65535, low < high')
    .optional(),
  SWITCHBOARD_ICE_SERVERS: z
    .string()
    .transform((value, ctx) => {
      try {
        return JSON.parse(value) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be JSON: [{"urls": "stun:stun.example.com:3478"}]' });
        return z.NEVER;
      }
    })
    .pipe(
      z
        .array(
          z
            .object({
              urls: z.union([z.string().regex(/^(stun|turns?):/), z.array(z.string().regex(/^(stun|turns?):/)).min(1)]),
              username: z.string().optional(),
              credential: z.string().optional(),
            })
            .strict(),
        )
        .max(8),
    )
    .optional(),
  SWITCHBOARD_CORS_ORIGINS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter((origin) => origin !== ''),
    )
    .refine(
      (origins) => origins.every((origin) => origin === '*' || isOrigin(origin)),
      'must be * or comma-separated origins such as https://app.example.com (no path)',
    )
    .optional(),
});

function isOrigin(value: string): boolean {
  try {
    return /^https?:$/.test(new URL(value).protocol) && new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** A STUN or TURN server as a browser's RTCPeerConnection takes it. */
export interface WebRtcIceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

export interface AppConfig {
  port: number;
  host: string;
  /** Base of wssUrl, room_url and webhook URLs, without a trailing slash. */
  publicUrl: string;
  dataDir: string;
  /** The PostgreSQL store's connection URL; unset means SQLite in the data dir. */
  databaseUrl?: string;
  /** Keys given in the environment, which win over the stored ones (see security/service-keys.ts). */
  serviceKeys: { secret?: Buffer[]; linkSigning?: Buffer; roomToken?: Buffer };
  /** Keys accepted for the default account, from SWITCHBOARD_API_KEY. */
  envApiKeys: string[];
  bodyLimitBytes: number;
  twilio: { accountSid?: string; authToken?: string };
  logLevel: (typeof logLevels)[number];
  /** Where phone numbers come from: the embedded sandbox, or Twilio (needs its credentials). */
  carrier: 'sandbox' | 'twilio';
  /** Customer webhooks may point at link-local and metadata addresses (off: a safety default). */
  webhookAllowLinkLocal: boolean;
  /** Collect V8's heap when no call is live, giving back what calls left (lifecycle/quiet-memory.ts). */
  giveBackMemory: boolean;
  /** How long a dial-in caller waits on hold for a bot before a polite message and hang-up. */
  dialinHoldTimeoutSecs: number;
  /** How long a dial-out call rings before it counts as unanswered. */
  dialoutRingTimeoutSecs: number;
  /** How long after finishing a turn a caller may wait in silence before the bot apologises. */
  turnDeadlineSecs: number;
  /** Call records and their transcripts are deleted this many days after the call started. */
  callRetentionDays: number;
  /** When set, GET /metrics requires `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** Browser origins (or `*`) whose pages may call POST /v1/bots/start (CORS); none by default. */
  corsOrigins: string[];
  /** Rooms of POST /v1/bots/start: how many at once, who may join, when an unused room closes. */
  rooms: {
    maxRooms: number;
    maxParticipants: number;
    joinTimeoutSecs: number;
    emptyGraceSecs: number;
    idleTimeoutSecs: number;
  };
  /**
   * WebRTC rooms: the address announced in ICE candidates behind a 1:1 NAT, the UDP ports media
   * uses, and the STUN/TURN servers handed to browsers (the server itself needs none).
   */
  webrtc: { publicIp?: string; udpPortRange?: [number, number]; iceServers: WebRtcIceServer[] };
  /** On SIGTERM, live calls may go on this long before the bot says goodbye and they are closed. */
  drainTimeoutSecs: number;
  /**
   * Several nodes (cluster/): REDIS_URL makes live state cluster-wide; `nodeUrl` is where the other
   * nodes reach this one (derived from the listen address when unset); a node silent for
   * `nodeTimeoutSecs` is dead.
   */
  cluster: { redisUrl?: string; nodeUrl?: string; nodeTimeoutSecs: number };
  /** Calls (phone calls and rooms) one account may have at once, across the cluster; unset: no limit. */
  accountMaxCalls?: number;
  /** The raw environment, for provider keys (`<VENDOR>_API_KEY`) and endpoint overrides. */
  env: Readonly<Record<string, string | undefined>>;
}

/** Parses the environment once at start-up. Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const cleaned: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') cleaned[key] = value.trim();
  }
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new EnvError(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.SWITCHBOARD_CARRIER === 'twilio' && !(e.TWILIO_ACCOUNT_SID && e.TWILIO_AUTH_TOKEN)) {
    throw new EnvError(
      'invalid environment:\n  SWITCHBOARD_CARRIER: twilio needs TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN',
    );
  }
  const publicUrl = (e.SWITCHBOARD_PUBLIC_URL ?? `http://localhost:${e.PORT}`).replace(/\/+$/, '');
  return {
    port: e.PORT,
    host: e.HOST,
    publicUrl,
    dataDir: e.SWITCHBOARD_DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    serviceKeys: {
      secret: e.SWITCHBOARD_SECRET_KEY,
      linkSigning: e.SWITCHBOARD_LINK_SIGNING_KEY,
      roomToken: e.SWITCHBOARD_ROOM_TOKEN_KEY,
    },
    envApiKeys: (e.SWITCHBOARD_API_KEY ?? '')
      .split(',')
      .map((key) => key.trim())
      .filter((key) => key.length > 0),
    bodyLimitBytes: e.SWITCHBOARD_BODY_LIMIT_BYTES,
    twilio: { accountSid: e.TWILIO_ACCOUNT_SID, authToken: e.TWILIO_AUTH_TOKEN },
    logLevel: e.LOG_LEVEL,
    metricsToken: e.SWITCHBOARD_METRICS_TOKEN,
    corsOrigins: e.SWITCHBOARD_CORS_ORIGINS ?? [],
    carrier: e.SWITCHBOARD_CARRIER,
    webhookAllowLinkLocal: e.SWITCHBOARD_WEBHOOK_ALLOW_LINK_LOCAL === 'true',
    giveBackMemory: e.SWITCHBOARD_GIVE_BACK_MEMORY === 'true',
    dialinHoldTimeoutSecs: e.SWITCHBOARD_DIALIN_HOLD_TIMEOUT_SECS,
    dialoutRingTimeoutSecs: e.SWITCHBOARD_DIALOUT_RING_TIMEOUT_SECS,
    turnDeadlineSecs: e.SWITCHBOARD_TURN_DEADLINE_SECS,
    callRetentionDays: e.SWITCHBOARD_CALL_RETENTION_DAYS,
    rooms: {
      maxRooms: e.SWITCHBOARD_MAX_ROOMS,
      maxParticipants: e.SWITCHBOARD_ROOM_MAX_PARTICIPANTS,
      joinTimeoutSecs: e.SWITCHBOARD_ROOM_JOIN_TIMEOUT_SECS,
      emptyGraceSecs: e.SWITCHBOARD_ROOM_EMPTY_GRACE_SECS,
      idleTimeoutSecs: e.SWITCHBOARD_ROOM_IDLE_TIMEOUT_SECS,
    },
    webrtc: {
      publicIp: e.SWITCHBOARD_WEBRTC_PUBLIC_IP,
      udpPortRange: e.SWITCHBOARD_WEBRTC_UDP_PORTS,
      iceServers: e.SWITCHBOARD_ICE_SERVERS ?? [],
    },
    drainTimeoutSecs: e.SWITCHBOARD_DRAIN_TIMEOUT_SECS,
    cluster: {
      redisUrl: e.REDIS_URL,
      nodeUrl: e.SWITCHBOARD_NODE_URL?.replace(/\/+$/, ''),
      nodeTimeoutSecs: e.SWITCHBOARD_NODE_TIMEOUT_SECS,
    },
    accountMaxCalls: e.SWITCHBOARD_ACCOUNT_MAX_CALLS,
    env,
  };
}

/** `https://x` gives `wss://x`, `http://x` gives `ws://x`. */
export function websocketBase(publicUrl: string): string {
  return publicUrl.replace(/^http/i, 'ws');
}

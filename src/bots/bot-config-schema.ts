import { validateHeaderName, validateHeaderValue } from 'node:http';
import { z } from 'zod';
import { PROVIDER_NAMES, type ServiceKind } from '../providers/catalog.js';
import {
  ALL_PROFILE_NAMES,
  type BotProfile,
  DOCUMENTED_PROFILE_NAMES,
  PROFILE_ALIASES,
  isSpeechToSpeech,
} from './profiles.js';
import { checkFunctionTools } from './function-tools.js';

/** Upper bound for max_duration: one day, as the hosted service allowed. */
export const MAX_DURATION_LIMIT_SECS = 86_400;
export const DEFAULT_MAX_DURATION_SECS = 600;

const shortText = z.string().min(1).max(256);

const botProfile = z
  .enum(ALL_PROFILE_NAMES as [string, ...string[]], {
    error: () => `must be one of: ${DOCUMENTED_PROFILE_NAMES.join(', ')}`,
  })
  .transform((value) => (PROFILE_ALIASES[value] ?? value) as BotProfile);

/** Provider names are checked against what the server can run (see providerNameIssues). */
const providerName = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be a provider name such as deepgram or openai');
const services = z
  .object({ stt: providerName.optional(), llm: providerName.optional(), tts: providerName.optional() })
  .strict();

/** `unknown llm provider …` (at `services.llm`) for each name neither the catalog nor the registry knows. */
export function providerNameIssues(
  services: Partial<Record<ServiceKind, string>>,
  extraNames: Partial<Record<ServiceKind, readonly string[]>> = {},
): Array<{ kind: ServiceKind; message: string }> {
  const issues: Array<{ kind: ServiceKind; message: string }> = [];
  for (const kind of Object.keys(PROVIDER_NAMES) as ServiceKind[]) {
    const name = services[kind];
    const known = [...new Set([...PROVIDER_NAMES[kind], ...(extraNames[kind] ?? [])])];
    if (name !== undefined && !known.includes(name))
      issues.push({ kind, message: `unknown ${kind} provider "${name}"; known: ${known.join(', ')}` });
  }
  return issues;
}

const messagePart = z.object({ type: shortText, text: z.string().max(100_000).optional() }).passthrough();

export const chatMessage = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant']),
    content: z.union([z.string().max(100_000), z.array(messagePart).max(100)]),
  })
  .passthrough();

const unitInterval = z.number().min(0).max(1);
const vadParams = z
  .object({
    confidence: unitInterval.optional(),
    start_secs: z.number().min(0).max(5).optional(),
    stop_secs: z.number().min(0).max(10).optional(),
    min_volume: unitInterval.optional(),
  })
  .strict();

/** Options each service kind accepts, by name. Unknown names are refused so typos surface early. */
const OPTION_SCHEMAS: Record<string, Record<string, z.ZodType>> = {
  stt: { model: shortText, language: shortText },
  llm: {
    model: shortText,
    initial_messages: z.array(chatMessage).max(500),
    run_on_config: z.boolean(),
    // Functions in OpenAI's format, or a built-in by its bare name ("end_call"); see function-tools.ts.
    tools: z.array(z.union([z.string().min(1).max(64), z.record(z.string(), z.unknown())])).max(128),
    // Passes with function calls one answer may make (README: Function calling).
    max_tool_rounds: z.number().int().min(0).max(20),
    temperature: z.number().min(0).max(2),
    max_tokens: z.number().int().min(1).max(128_000),
    // Speech-to-speech profiles configure only the LLM, so its voice and language live here.
    voice: shortText,
    language: shortText,
  },
  tts: {
    voice: shortText,
    model: shortText,
    language: shortText,
    speed: z.number().min(0.25).max(4),
    text_filter: z.unknown(),
  },
  vad: {
    params: vadParams,
    confidence: unitInterval,
    start_secs: z.number().min(0).max(5),
    stop_secs: z.number().min(0).max(10),
    min_volume: unitInterval,
  },
  // How the caller's speech over the bot stops it (README: Barge-in).
  interruption: {
    mode: z.enum(['instant', 'confirmed']),
    min_words: z.number().int().min(0).max(10),
    turn_policy: z.enum(['default', 'natural_conversation']),
  },
};

const configEntry = z
  .object({
    service: z.enum(['stt', 'llm', 'tts', 'vad', 'interruption']),
    options: z.array(z.object({ name: shortText, value: z.unknown() }).strict()).max(64),
  })
  .strict()
  .superRefine((entry, ctx) => {
    const schemas = OPTION_SCHEMAS[entry.service] ?? {};
    entry.options.forEach((option, index) => {
      const schema = schemas[option.name];
      if (!schema) {
        ctx.addIssue({
          code: 'custom',
          path: ['options', index, 'name'],
          message: `unknown ${entry.service} option "${option.name}"; known: ${Object.keys(schemas).join(', ')}`,
        });
        return;
      }
      const result = schema.safeParse(option.value);
      if (!result.success) {
        for (const issue of result.error.issues) {
          ctx.addIssue({ code: 'custom', path: ['options', index, 'value', ...issue.path], message: issue.message });
        }
      }
    });
  });

/** Whether Node would send `value` in an HTTP header (its own check, which websocket upgrades share). */
function isHeaderValue(value: string): boolean {
  try {
    validateHeaderValue('x-provider-key', value);
    return true;
  } catch {
    return false;
  }
}

/**
 * A provider key goes into a request header (Authorization, x-api-key, a websocket upgrade). One
 * Node refuses to send would fail every call at set-up, so it is refused when it is written.
 */
const providerKey = z.string().min(1).max(4096).refine(isHeaderValue, {
  message:
    'cannot be sent in an HTTP header: it holds a line break, a control character or a character such as "…"; paste the key exactly as the vendor issued it',
});

const e164 = z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +15550100123');

const dialoutTarget = z
  .object({
    phoneNumber: e164.optional(),
    sipUri: z
      .string()
      .regex(/^sips?:[^@\s]+@[^\s]+$/, 'must be a SIP URI such as sip:+15550100123@example.com')
      .optional(),
    callerId: shortText.optional(),
    displayName: shortText.optional(),
  })
  .passthrough()
  .refine((t) => (t.phoneNumber === undefined) !== (t.sipUri === undefined), {
    message: 'each dial-out target needs exactly one of phoneNumber or sipUri',
  });

const dialinSettings = z
  .object({
    call_id: shortText.optional(),
    call_domain: shortText.optional(),
    callId: shortText.optional(),
    callDomain: shortText.optional(),
  })
  .passthrough();

function parsedUrl(raw: string): URL | undefined {
  try {
    return new URL(raw);
  } catch {
    return undefined;
  }
}

/** Longest a function may take before its call becomes a timed-out result (per tool `timeout_secs`). */
export const MAX_TOOL_TIMEOUT_SECS = 120;

/**
 * One entry of `webhook_tools`, keyed by function name. `url`, `method`, `custom_headers` and
 * `streaming` are the hosted API's; `say` (a filler phrase spoken while the function runs),
 * `timeout_secs` and `cancel_on_interruption` are Switchboard's. Header names that would break
 * the request, or that the webhook runner sets itself, are refused when the configuration is saved.
 */
export const webhookTool = z
  .object({
    url: z
      .string()
      .max(2048)
      .url()
      .refine((raw) => /^https?:$/.test(parsedUrl(raw)?.protocol ?? 'http:'), {
        message: 'must be an http:// or https:// URL',
      })
      .refine((raw) => !parsedUrl(raw)?.username && !parsedUrl(raw)?.password, {
        message: 'must not carry credentials (send them in custom_headers)',
      }),
    method: z.enum(['POST', 'GET']).optional(),
    streaming: z.boolean().optional(),
    custom_headers: z
      .record(z.string().max(256), z.string().max(8192))
      .optional()
      .superRefine((headers, ctx) => {
        for (const [name, value] of Object.entries(headers ?? {})) {
          const problem = customHeaderProblem(name, value);
          if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
        }
      }),
    say: z.string().min(1).max(500).optional(),
    timeout_secs: z.number().positive().max(MAX_TOOL_TIMEOUT_SECS).optional(),
    cancel_on_interruption: z.boolean().optional(),
  })
  .passthrough();
export type WebhookToolSettings = z.output<typeof webhookTool>;

/** The `webhook_tools` key whose entry answers every function without an entry of its own. */
export const ANY_FUNCTION = '*';

/** Function names as every vendor accepts them (OpenAI's rule is the strictest of the three). */
export const FUNCTION_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;

/**
 * Headers the webhook request sets itself, or that would change how HTTP frames or routes the
 * request: a custom value for one of them would break the call or forge the signature.
 */
export const RESERVED_HEADER_NAMES: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
  'proxy-authorization',
  'http2-settings',
  'accept-encoding',
  'x-switchboard-signature',
]);

/** Why a `custom_headers` entry cannot be sent, or undefined when it can. */
export function customHeaderProblem(name: string, value: string): string | undefined {
  try {
    validateHeaderName(name);
  } catch {
    return `"${name}" is not a valid HTTP header name`;
  }
  if (RESERVED_HEADER_NAMES.has(name.toLowerCase()))
    return `"${name}" is set by Switchboard (or would break the request) and cannot be a custom header`;
  if (!isHeaderValue(value)) return 'cannot be sent in an HTTP header: it holds a line break or a control character';
  return undefined;
}

const recordingsBucket = z
  .object({
    bucket_name: shortText,
    bucket_region: shortText,
    assume_role_arn: shortText.optional(),
    allow_api_access: z.boolean().optional(),
    allow_streaming_from_bucket: z.boolean().optional(),
  })
  .strict();

export const recordingSettings = z
  .object({ type: z.enum(['cloud']), recordings_bucket: recordingsBucket.optional() })
  .strict();

/** What is kept of each call (calls/): the transcript holds callers' words, personal data, so it can be turned off. */
export const callRecordSettings = z.object({ transcript: z.boolean().default(true) }).strict();

/** Told when each call ends, signed with `hmac` (base64, as pinless dial-in's). */
export const statusCallback = z
  .object({
    url: z.string().url().max(2048),
    hmac: z
      .string()
      .regex(/^[A-Za-z0-9+/]{22,}={0,2}$/, 'must be a base64 secret of at least 16 bytes')
      .max(512),
  })
  .strict();

const serviceOptions = z.union([
  z.record(z.string(), z.record(z.string(), z.unknown())),
  z.array(z.record(z.string(), z.record(z.string(), z.unknown()))),
]);

/** The fields shared by a telephony configuration and a start-bot request. */
export const botConfigFields = {
  bot_profile: botProfile,
  services,
  config: z.array(configEntry).max(32).default([]),
  max_duration: z.number().int().min(1).max(MAX_DURATION_LIMIT_SECS).default(DEFAULT_MAX_DURATION_SECS),
  api_keys: z.record(shortText, providerKey).default({}),
  service_options: serviceOptions.default({}),
  // Keyed by function name; "*" answers every function that has no entry of its own.
  webhook_tools: z
    .record(
      z.union([
        z.literal(ANY_FUNCTION),
        z
          .string()
          .regex(
            FUNCTION_NAME_PATTERN,
            'must be a function name (a letter or _, then up to 63 letters, digits, _ or -) or "*"',
          ),
      ]),
      webhookTool,
    )
    .optional(),
  /** Signs webhook tool requests (README: Function calling); generated when a configuration has tools and none is given. */
  webhook_secret: z
    .string()
    .min(16, 'must be at least 16 characters')
    .max(256)
    .refine(isHeaderValue, { message: 'must be printable characters only' })
    .optional(),
  rtvi_client_version: shortText.optional(),
  dialin_settings: dialinSettings.optional(),
  recording_settings: recordingSettings.optional(),
  call_record_settings: callRecordSettings.optional(),
  status_callback: statusCallback.optional(),
};

/** Speech-to-speech profiles need only an LLM; pipeline profiles need all three services. */
export function checkServicesForProfile(
  value: { bot_profile: BotProfile; services: Record<string, string | undefined> },
  ctx: z.RefinementCtx,
): void {
  const needed: ServiceKind[] = isSpeechToSpeech(value.bot_profile) ? ['llm'] : ['stt', 'llm', 'tts'];
  for (const kind of needed) {
    if (!value.services[kind]) {
      ctx.addIssue({
        code: 'custom',
        path: ['services', kind],
        message: `profile ${value.bot_profile} needs a ${kind} provider`,
      });
    }
  }
}

/** Body of POST /v1/bots/twilio-config (create) and POST /v1/bots/twilio-config/{id} (replace). */
export const telephonyConfigBody = z
  .object({
    ...botConfigFields,
    dialout_settings: z.array(dialoutTarget).max(32).optional(),
    room: z.object({ geo: shortText.optional(), x_mesh_sfu: shortText.optional() }).strict().optional(),
  })
  .strict()
  .superRefine(checkServicesForProfile)
  .superRefine((value, ctx) => checkFunctionTools(value, ctx, { roomClient: false }));

export type TelephonyConfigBody = z.output<typeof telephonyConfigBody>;
export type ConfigEntry = z.output<typeof configEntry>;
export type ChatMessage = z.output<typeof chatMessage>;
export { dialoutTarget };

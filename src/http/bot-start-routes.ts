import type { FastifyInstance } from 'fastify';
import { providerNameIssues } from '../bots/bot-config-schema.js';
import { asBotConfigBody, dialinCall, dialoutTargets, startBotBody, type StartBotBody } from '../bots/start-bot-schema.js';
import { type AppConfig, websocketBase } from '../config/env.js';
import type { DialinCalls } from '../dialin/dialin-calls.js';
import type { DialoutService } from '../dialout/dialout-service.js';
import { NATURAL_TURN_POLICY, NATURAL_VAD_STOP_SECS } from '../pipeline/natural-turn-policy.js';
import { providerSetupIssues } from '../pipeline/provider-settings.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { RoomManager } from '../rooms/room-manager.js';
import { ApiError, describeZodError } from './errors.js';

export interface BotStartRoutesOptions {
  rooms: RoomManager;
  registry: ProviderRegistry;
  env: AppConfig['env'];
  publicUrl: string;
  /** Dial-in callers on hold; dialin_settings hands one to the new room's bot. */
  dialinCalls: DialinCalls;
  /** Places the calls of dialout_settings once the room is open. */
  dialout: DialoutService;
}

const VISION_PROFILES = new Set(['vision_2024_10', 'vision_2024_08']);

/** Endpoint 1 of the spec: start a bot in a new room. Mounted under /v1 behind the API-key check. */
export async function botStartRoutes(app: FastifyInstance, opts: BotStartRoutesOptions): Promise<void> {
  const { registry, env } = opts;

  /** The body, validated, or a 400 naming every bad field (provider names and keys included). */
  function parseBody(raw: unknown): StartBotBody {
    const body = startBotBody.safeParse(raw ?? undefined);
    const rawServices = (raw as { services?: unknown } | null | undefined)?.services;
    const names = { stt: registry.names('stt'), llm: registry.names('llm'), tts: registry.names('tts') };
    const providerIssues =
      rawServices && typeof rawServices === 'object'
        ? providerNameIssues(Object.fromEntries(Object.entries(rawServices).filter(([, v]) => typeof v === 'string')), names)
        : [];
    if (!body.success) throw new ApiError('invalid-request-error', [describeZodError(body.error), ...providerIssues].join('; '));
    if (providerIssues.length > 0) throw new ApiError('invalid-request-error', providerIssues.join('; '));
    const setupIssues = providerSetupIssues(body.data, registry, env);
    if (setupIssues.length > 0) throw new ApiError('invalid-request-error', setupIssues.join('; '));
    return body.data;
  }

  app.post('/bots/start', async (request) => {
    const body = parseBody(request.body);
    opts.rooms.assertCapacity();
    const dialin = dialinCall(body);
    // Every target is checked (caller ids, reachable destinations) before a room or call exists.
    const dialPlans = await opts.dialout.plan(request.account.id, dialoutTargets(body), dialin ? 1 : 0);
    const phoneCall = dialin ? opts.dialinCalls.claim(request.account, dialin.callId, dialin.callDomain) : undefined;
    const profile = body.bot_profile;
    const natural = profile === 'natural_conversation_2024_11';
    const configBody = asBotConfigBody(body);
    if (natural) {
      // A shorter pause ends speech; the words then decide whether the turn is over. The bot's
      // own vad settings come later in the list, so they still win.
      configBody.config = [{ service: 'vad', options: [{ name: 'stop_secs', value: NATURAL_VAD_STOP_SECS }] }, ...configBody.config];
    }
    const { name, token, room } = opts.rooms.start({
      config: { id: '', accountId: request.account.id, body: configBody },
      turnPolicy: natural ? NATURAL_TURN_POLICY : undefined,
      vision: VISION_PROFILES.has(profile),
      phoneCall,
    });
    opts.dialout.start(room, dialPlans);
    if (body.transport === 'websocket') {
      // Pipecat's websocket transport takes only a URL (older versions refuse even a `token` key),
      // so the token rides in the query, where the room socket accepts it.
      return { ws_url: `${websocketBase(opts.publicUrl)}/rooms/${name}/ws?token=${encodeURIComponent(token)}` };
    }
    return { room_url: `${opts.publicUrl}/rooms/${name}`, token };
  });
}

import { z } from 'zod';
import {
  botConfigFields,
  checkServicesForProfile,
  dialoutTarget,
  type TelephonyConfigBody,
} from './bot-config-schema.js';
import { checkFunctionTools } from './function-tools.js';

/**
 * Body of POST /v1/bots/start: the fields a telephony configuration shares (validated by the same
 * schemas), `dialin_settings` in both spellings (`callId`/`callDomain` of the dial-in guide,
 * `call_id`/`call_domain` of the reference), and `dialout_settings` as an array of targets or a
 * single one.
 */
export const startBotBody = z
  .object({
    ...botConfigFields,
    dialout_settings: z.union([z.array(dialoutTarget).min(1).max(32), dialoutTarget]).optional(),
    /**
     * "websocket": answer with what Pipecat's WebSocketTransport connects with, `{ws_url}`,
     * instead of the spec's `{room_url, token}` (that transport refuses any other key).
     * "webrtc": answer with what Pipecat's SmallWebRTCTransport connects with, the room's offer
     * URL (`webrtcRequestParams`) and the STUN/TURN servers (`iceConfig`).
     */
    transport: z
      .enum(['websocket', 'webrtc'], {
        error: () => 'transport must be "websocket" or "webrtc" (or left out for {room_url, token})',
      })
      .optional(),
  })
  .strict()
  .superRefine(checkServicesForProfile)
  // A room's client answers functions that are neither webhooks nor built in.
  .superRefine((value, ctx) => checkFunctionTools(value, ctx, { roomClient: true }))
  .superRefine((value, ctx) => {
    if (value.transport === 'websocket' && value.webhook_tools && !value.webhook_secret)
      ctx.addIssue({
        code: 'custom',
        path: ['webhook_secret'],
        message:
          'webhook_tools with "transport": "websocket" need a webhook_secret of your own: that answer has no room for a generated one',
      });
    const profile = value.bot_profile;
    if (profile === 'telephony_ws_voice_2024_09') {
      ctx.addIssue({
        code: 'custom',
        path: ['bot_profile'],
        message:
          'telephony_ws_voice_2024_09 runs over a phone number, not in a room: create it with POST /v1/bots/twilio-config and point the number at its TwiML',
      });
    }
    const dialin = value.dialin_settings;
    if (dialin) {
      const callId = dialin.callId ?? dialin.call_id;
      if (callId === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['dialin_settings'],
          message: 'needs callId (or call_id) from the dial-in webhook',
        });
      if (dialin.callId !== undefined && dialin.call_id !== undefined && dialin.callId !== dialin.call_id) {
        ctx.addIssue({
          code: 'custom',
          path: ['dialin_settings'],
          message: 'callId and call_id disagree; send one spelling',
        });
      }
      if (
        dialin.callDomain !== undefined &&
        dialin.call_domain !== undefined &&
        dialin.callDomain !== dialin.call_domain
      ) {
        ctx.addIssue({
          code: 'custom',
          path: ['dialin_settings'],
          message: 'callDomain and call_domain disagree; send one spelling',
        });
      }
    }
  });

export type StartBotBody = z.output<typeof startBotBody>;

/** The dial-in call a start request names, whichever spelling it used. */
export function dialinCall(body: StartBotBody): { callId: string; callDomain: string | undefined } | undefined {
  const dialin = body.dialin_settings;
  const callId = dialin?.callId ?? dialin?.call_id;
  if (!dialin || callId === undefined) return undefined;
  return { callId, callDomain: dialin.callDomain ?? dialin.call_domain };
}

/** Dial-out targets as a list, whichever form the request used. */
export function dialoutTargets(body: StartBotBody): Array<z.output<typeof dialoutTarget>> {
  const settings = body.dialout_settings;
  if (settings === undefined) return [];
  return Array.isArray(settings) ? settings : [settings];
}

/** The start request as the call pipeline reads a bot configuration. */
export function asBotConfigBody(body: StartBotBody): TelephonyConfigBody {
  const { dialout_settings: _dialout, transport: _transport, ...rest } = body;
  return { ...rest, dialout_settings: dialoutTargets(body) };
}

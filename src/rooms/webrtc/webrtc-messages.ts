import { z } from 'zod';

/**
 * The SmallWebRTC signalling of Pipecat's client (`@pipecat-ai/small-webrtc-transport`): an SDP
 * offer POSTed to the offer URL and answered with the server's SDP and the peer connection's id,
 * ICE candidates in batches PATCHed to the same URL, and `signalling` messages on the data channel.
 */

/** An SDP body larger than this is not a browser's offer (Chrome's, with three m-lines and every candidate, is about 6 KB). */
export const MAX_SDP_BYTES = 32 * 1024;
/** Candidates in one PATCH: the client flushes every 200 ms, so a batch holds a handful. */
export const MAX_CANDIDATES_PER_PATCH = 32;

/** Our peer connection ids: base64url, as the server hands them out. */
const pcId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'pc_id is not one this server handed out');

export const offerBody = z
  .object({
    sdp: z
      .string()
      .min(1)
      .max(MAX_SDP_BYTES, `sdp is over ${MAX_SDP_BYTES} bytes`)
      .refine((sdp) => sdp.startsWith('v=0'), 'sdp must be a session description (starting "v=0")'),
    type: z.literal('offer', { error: () => 'type must be "offer"' }),
    /** Absent or null on the first offer; the id the answer gave on later ones. */
    pc_id: pcId.nullish(),
    /** The client wants a new peer connection (ICE restart after a network change). */
    restart_pc: z.boolean().nullish(),
    /** The app's data from `webrtcRequestParams.requestData`: accepted and not used. */
    requestData: z.unknown().optional(),
  })
  .strict();
export type OfferBody = z.output<typeof offerBody>;

export const answerBody = z.object({
  sdp: z.string(),
  type: z.literal('answer'),
  pc_id: z.string(),
});

const candidate = z
  .object({
    candidate: z.string().max(1024),
    sdp_mid: z.string().max(32).nullish(),
    sdp_mline_index: z.number().int().min(0).max(16).nullish(),
  })
  .strict();

export const patchBody = z
  .object({
    pc_id: pcId,
    candidates: z
      .array(candidate)
      .max(MAX_CANDIDATES_PER_PATCH, `at most ${MAX_CANDIDATES_PER_PATCH} candidates per request`),
  })
  .strict();
export type PatchBody = z.output<typeof patchBody>;

/** A `signalling` message from the client on the data channel: it muted or unmuted a track. */
export const clientSignalling = z.object({
  type: z.literal('signalling'),
  message: z
    .object({
      type: z.literal('trackStatus'),
      receiver_index: z.number().int().min(0).max(8),
      enabled: z.boolean(),
    })
    .strict(),
});

/** The server's `signalling` messages: `renegotiate` asks the client for a new offer; `peerLeft`: the bot left. */
export function serverSignalling(type: 'renegotiate' | 'peerLeft'): string {
  return JSON.stringify({ type: 'signalling', message: { type } });
}

import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { TokenBucket } from '../../security/token-bucket.js';
import { ApiError } from '../../shared/api-error.js';
import type { RoomManager } from '../room-manager.js';
import { CLOSE } from '../../shared/close-codes.js';
import type { OfferBody, PatchBody } from './webrtc-messages.js';
import type { WebRtcNetwork, WebRtcParticipant, WebRtcParticipantLimits } from './webrtc-participant.js';

type WebRtcStack = typeof import('./webrtc-participant.js');
let stack: Promise<WebRtcStack> | undefined;

/**
 * The WebRTC stack (werift, its certificates and DTLS, the Opus codec) loads on the first offer:
 * about 35 MB of memory and a second or two of loading that a server carrying only phone calls
 * never needs. The first offer of the process waits for it, once.
 */
function loadWebRtcStack(): Promise<WebRtcStack> {
  stack ??= import('./webrtc-participant.js');
  return stack;
}

export interface WebRtcPeersOptions {
  rooms: RoomManager;
  network: WebRtcNetwork;
  /** Peer connections this node holds at once; more are refused (503) rather than starving the rest. */
  maxPeers: number;
  limits?: WebRtcParticipantLimits;
  log: Logger;
}

/** PATCH requests a peer may make: the client flushes candidates every 200 ms while gathering. */
const PATCHES_PER_SEC = 10;
const PATCH_BURST = 20;
/** Candidates one peer connection may be sent in all: a browser has a handful per interface. */
const MAX_CANDIDATES_PER_PEER = 200;

interface Peer {
  roomName: string;
  participant: WebRtcParticipant;
  patches: TokenBucket;
  candidates: number;
  /** An offer of this peer is being answered: offers of one peer are answered one at a time. */
  answering: boolean;
}

export interface WebRtcAnswer {
  sdp: string;
  type: 'answer';
  pc_id: string;
}

/**
 * The SmallWebRTC offer endpoint's state: peers by `pc_id`, each a participant of one room. A first
 * offer admits a new participant (room limits apply), a later one with the same `pc_id`
 * renegotiates or (with `restart_pc`) restarts its connection, and a peer that went silent comes
 * back under its `pc_id` while the room is open. Everything about one peer fails alone: an offer
 * that cannot be applied, a PATCH flood, an unknown id are refused without touching other rooms.
 */
export class WebRtcPeers {
  private readonly peers = new Map<string, Peer>();
  private readonly watchedRooms = new Set<string>();

  constructor(private readonly options: WebRtcPeersOptions) {}

  /** The room is open on this node. */
  hasRoom(roomName: string): boolean {
    return this.options.rooms.get(roomName) !== undefined;
  }

  /** Live peer connections on this node. */
  get liveCount(): number {
    let live = 0;
    for (const peer of this.peers.values()) if (!peer.participant.isGone) live += 1;
    return live;
  }

  /** Answers an offer for `roomName`, whose token the caller has checked. Throws ApiError. */
  async offer(roomName: string, body: OfferBody, log: Logger): Promise<WebRtcAnswer> {
    const webrtc = await loadWebRtcStack();
    const room = this.options.rooms.get(roomName);
    if (!room || room.isClosed) throw new ApiError('not-found', 'room not found or has closed');
    let peer: Peer | undefined;
    if (body.pc_id) {
      peer = this.peers.get(body.pc_id);
      if (!peer || peer.roomName !== roomName)
        throw new ApiError('not-found', 'unknown pc_id: send the first offer without one');
      if (peer.answering) throw new ApiError('conflict-error', 'an offer for this pc_id is being answered');
      if (peer.participant.isGone) peer = this.admit(webrtc, roomName, body.pc_id, log, true, peer);
    } else {
      peer = this.admit(webrtc, roomName, randomBytes(12).toString('base64url'), log, false);
    }
    const participant = peer.participant;
    peer.answering = true;
    try {
      const sdp = await participant.answer(body.sdp, body.restart_pc === true);
      return { sdp, type: 'answer', pc_id: participant.pcId };
    } catch (err) {
      if (err instanceof webrtc.SdpError) {
        // A first offer that cannot be applied leaves nothing behind; a bad renegotiation ends the peer.
        participant.close(CLOSE.policyViolation, err.message);
        if (!body.pc_id) this.peers.delete(participant.pcId);
        throw new ApiError('invalid-request-error', err.message);
      }
      log.error({ err, pcId: participant.pcId }, 'webrtc answer failed');
      participant.close(CLOSE.internalError, 'the server could not answer the offer');
      throw new ApiError('server-error', 'the server could not answer the offer');
    } finally {
      peer.answering = false;
    }
  }

  /** Adds a batch of the browser's ICE candidates; the number taken. Throws ApiError. */
  async patch(roomName: string, body: PatchBody): Promise<number> {
    const peer = this.peers.get(body.pc_id);
    if (!peer || peer.roomName !== roomName) throw new ApiError('not-found', 'unknown pc_id');
    if (peer.participant.isGone) throw new ApiError('not-found', 'this peer connection has ended; send a new offer');
    if (!peer.patches.take())
      throw new ApiError('rate-limit-error', `more than ${PATCHES_PER_SEC} candidate requests a second`);
    peer.candidates += body.candidates.length;
    if (peer.candidates > MAX_CANDIDATES_PER_PEER)
      throw new ApiError('rate-limit-error', `more than ${MAX_CANDIDATES_PER_PEER} candidates for one connection`);
    return peer.participant.addCandidates(body.candidates);
  }

  private admit(
    webrtc: WebRtcStack,
    roomName: string,
    pcId: string,
    log: Logger,
    resumed: boolean,
    previous?: Peer,
  ): Peer {
    if (this.liveCount >= this.options.maxPeers) {
      throw new ApiError(
        'service-unavailable',
        `this server holds its maximum of ${this.options.maxPeers} WebRTC connections; try again later`,
      );
    }
    const room = this.options.rooms.get(roomName);
    if (!room || room.isClosed) throw new ApiError('not-found', 'room not found or has closed');
    const admitted = room.admitParticipant(
      (events) =>
        new webrtc.WebRtcParticipant(
          pcId,
          log.child({ pcId }),
          events,
          this.options.network,
          this.options.limits ?? webrtc.DEFAULT_WEBRTC_LIMITS,
          resumed,
          room.seesCamera,
        ),
    );
    if (!(admitted instanceof webrtc.WebRtcParticipant)) {
      if (admitted.why === 'closed') throw new ApiError('not-found', 'room not found or has closed');
      throw new ApiError('conflict-error', admitted.message);
    }
    const peer: Peer = previous
      ? { ...previous, participant: admitted, answering: false }
      : {
          roomName,
          participant: admitted,
          patches: new TokenBucket(PATCH_BURST, PATCHES_PER_SEC),
          candidates: 0,
          answering: false,
        };
    this.peers.set(pcId, peer);
    if (!this.watchedRooms.has(roomName)) {
      this.watchedRooms.add(roomName);
      room.onClose(() => this.forgetRoom(roomName));
    }
    return peer;
  }

  private forgetRoom(roomName: string): void {
    this.watchedRooms.delete(roomName);
    for (const [pcId, peer] of this.peers) if (peer.roomName === roomName) this.peers.delete(pcId);
  }
}

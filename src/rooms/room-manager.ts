import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { BotConfigForCall } from '../bots/bot-config-service.js';
import type { Coordinator } from '../cluster/coordinator.js';
import type { ClaimedCall } from '../dialin/dialin-calls.js';
import { ApiError } from '../shared/api-error.js';
import { type LiveCalls, SHUTDOWN_REASON } from '../lifecycle/live-calls.js';
import type { CallSessionDeps } from '../pipeline/call-deps.js';
import type { RecordingsService } from '../recordings/recordings-service.js';
import type { CallRecordsService } from '../records/call-records-service.js';
import type { TurnPolicy } from '../pipeline/turn-controller.js';
import { CLOSE } from '../shared/close-codes.js';
import { Room, type RoomLimits } from './room.js';
import type { RoomTokens } from './room-tokens.js';

export interface RoomManagerOptions {
  tokens: RoomTokens;
  limits: RoomLimits;
  /** Rooms open at once (across the cluster with several nodes); more are refused (503) rather than starving the rest. */
  maxRooms: number;
  /** Holds each room's name for this node, so the other nodes route its participants here, and counts rooms for `maxRooms`. */
  cluster: Coordinator;
  session: Omit<CallSessionDeps, 'log' | 'events' | 'latestImage' | 'turnPolicy'>;
  /** Records rooms whose configuration asks for it (`recording_settings.type = "cloud"`). */
  recordings?: RecordingsService;
  /** Every room gets a call record. */
  records?: CallRecordsService;
  /** Every room is registered here; while the server drains, no room opens. */
  liveCalls: LiveCalls;
  log: Logger;
}

export interface StartRoomRequest {
  config: BotConfigForCall;
  turnPolicy?: TurnPolicy;
  vision: boolean;
  /** A waiting dial-in caller to put in the room (dialin_settings). */
  phoneCall?: ClaimedCall;
  /** Told when the room has closed (e.g. to free the account's call slot). */
  onClosed?: () => void;
}

/** The goodbye at max_duration may take this long to play before the room is closed anyway. */
const GOODBYE_GRACE_MS = 20_000;

/** Rooms by name, each with its bot; tokens to join them. */
export class RoomManager {
  private readonly rooms = new Map<string, Room>();

  constructor(private readonly options: RoomManagerOptions) {}

  get tokens(): RoomTokens {
    return this.options.tokens;
  }

  get openRooms(): number {
    return this.rooms.size;
  }

  /** Throws a 503 ApiError when the server is shutting down (checked before anything is claimed). */
  assertCapacity(): void {
    if (this.options.liveCalls.isDraining)
      throw new ApiError('service-unavailable', 'this server is shutting down; try again (another server will answer)');
  }

  /**
   * Takes a room name under the room limit, counted across the cluster in the same step, so two
   * nodes cannot both open the last room. A 503 ApiError at the limit.
   */
  async reserve(): Promise<string> {
    const name = randomBytes(9).toString('base64url');
    if (!(await this.options.cluster.claim('room', name, this.options.maxRooms))) {
      throw new ApiError(
        'service-unavailable',
        `this server is running its maximum of ${this.options.maxRooms} rooms; try again later`,
      );
    }
    return name;
  }

  /** Gives back a name `reserve` took when the room did not open after all. */
  unreserve(name: string): void {
    this.options.cluster.release('room', name);
  }

  /** Opens a room with its bot under a reserved name and returns a token to join it. */
  start(name: string, request: StartRoomRequest): { name: string; token: string; room: Room } {
    // Not refused while draining: a telephony call accepted just before the signal still gets its room.
    const maxDurationMs = request.config.body.max_duration * 1000;
    const maxDurationAtMs = this.options.session.clock.now() + maxDurationMs;
    let release = (): void => undefined;
    const room = new Room({
      name,
      config: { ...request.config, id: `room-${name}` },
      maxDurationAtMs,
      hardStopAtMs: maxDurationAtMs + GOODBYE_GRACE_MS,
      limits: this.options.limits,
      session: this.options.session,
      recordings: this.options.recordings,
      records: this.options.records,
      turnPolicy: request.turnPolicy,
      vision: request.vision,
      log: this.options.log,
      onClosed: (closed) => {
        if (this.rooms.get(closed.name) === closed) this.rooms.delete(closed.name);
        this.options.cluster.release('room', closed.name);
        release();
        request.onClosed?.();
      },
    });
    release = this.options.liveCalls.add({
      endWithGoodbye: () => room.endWithGoodbye(),
      endNow: () => room.close(SHUTDOWN_REASON, CLOSE.goingAway),
      onDrain: () => room.drain(),
    });
    this.rooms.set(name, room);
    if (request.phoneCall) room.addPhoneCall(request.phoneCall);
    // A token is checked against Unix time; the room itself closes at max_duration on the calls' clock.
    const token = this.options.tokens.issue(name, Math.ceil((Date.now() + maxDurationMs) / 1000));
    return { name, token, room };
  }

  get(name: string): Room | undefined {
    return this.rooms.get(name);
  }
}

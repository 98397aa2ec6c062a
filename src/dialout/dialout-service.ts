import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Coordinator } from '../cluster/coordinator.js';
import { ApiError } from '../shared/api-error.js';
import type { CallTransport, CallTransportHandler } from '../pipeline/call-transport.js';
import type { PhoneNumbersRepo } from '../store/phone-numbers-repo.js';
import type { Carrier, OutboundCallStage } from '../telephony/carrier/carrier.js';

/** A dial-out target as the API takes it (exactly one of phoneNumber and sipUri; checked by the schema). */
export interface DialoutTarget {
  phoneNumber?: string;
  sipUri?: string;
  /** Id of one of the account's purchased numbers, shown to the callee. */
  callerId?: string;
}

/** A target resolved against the account: what to dial and which number it comes from. */
export interface DialPlan {
  to: string;
  from: string;
}

/** The room a leg belongs to, as far as dialling is concerned (Room implements it). */
export interface DialoutRoom {
  readonly name: string;
  readonly isClosed: boolean;
  /** This many legs are ringing for the room: it should not close for want of participants yet. */
  expectDialouts(count: number): void;
  /** The callee answered and its media stream is here; it joins when the stream starts. */
  addCallee(transport: AttachableTransport, to: string): void;
  /** A leg ended without ever joining (busy, no answer, failed, cancelled). */
  dialoutEnded(to: string, outcome: string): void;
  onClose(listener: () => void): void;
}

export type AttachableTransport = CallTransport & { attach(handler: CallTransportHandler): void };

type LegStage = 'dialling' | OutboundCallStage | 'ended';

interface Leg {
  id: string;
  room: DialoutRoom;
  plan: DialPlan;
  carrierRef?: string;
  stage: LegStage;
  /** The callee's media stream reached us (the leg joined, or is joining, the room). */
  joined: boolean;
  log: Logger;
}

export interface DialoutServiceOptions {
  carrier: Carrier;
  numbers: PhoneNumbersRepo;
  publicUrl: string;
  ringTimeoutSecs: number;
  /** A room holds this many participants; more targets than that could never all join. */
  maxParticipants: number;
  log: Logger;
  /**
   * Each leg is registered here before it is dialled: the carrier's callbacks and the leg's media
   * stream name the public address, and a node that does not hold the leg passes them to this one.
   */
  cluster: Coordinator;
  /** Counts legs by outcome for /metrics. */
  metrics?: { dialoutLeg(outcome: LegOutcome): void };
}

export type LegOutcome = 'answered' | 'busy' | 'no-answer' | 'failed' | 'canceled';

/** Carrier statuses that end a call (Twilio's names; the sandbox carrier sends the same). */
const FINAL_STATUSES = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

/**
 * How long a leg cancelled by its room's closing waits for the carrier's last status callback
 * (Twilio sends `canceled` within seconds of the REST request). Long enough for a carrier that
 * retries, short enough that a callback that never comes costs nothing.
 */
const LAST_STATUS_WAIT_MS = 5 * 60_000;

/**
 * Dial-out legs: a room's bot dials each target when it starts; the carrier reports progress to
 * `/twilio/dialout/:leg/status` and, when the callee answers, asks `/twilio/dialout/:leg` for TwiML
 * that streams the leg to `/ws/dialout/:leg`, where it joins the room. Busy, unanswered and
 * failed legs are logged and end without touching the rest of the room; a room that closes
 * cancels the legs still ringing.
 */
export class DialoutService {
  private readonly legs = new Map<string, Leg>();
  /**
   * Legs cancelled because their room closed, already counted and logged, waiting for the
   * carrier's last callback: it is recognised (and not counted again), and the cluster still
   * sends it here. Each is forgotten on that callback, or after LAST_STATUS_WAIT_MS.
   */
  private readonly cancelled = new Map<string, { leg: Leg; timer: NodeJS.Timeout }>();

  constructor(private readonly options: DialoutServiceOptions) {}

  /**
   * Checks the targets before anything starts: they must fit in a room beside `otherPhoneLegs`
   * (a dial-in or telephony caller), a callerId must be one of the account's numbers, and without
   * one the account's newest number calls. A 400 names the first bad target.
   */
  async plan(accountId: string, targets: readonly DialoutTarget[], otherPhoneLegs = 0): Promise<DialPlan[]> {
    const max = this.options.maxParticipants;
    if (targets.length + otherPhoneLegs > max) {
      const others = otherPhoneLegs > 0 ? ` plus ${otherPhoneLegs} caller` : '';
      throw new ApiError(
        'invalid-request-error',
        `dialout_settings: ${targets.length} targets${others}, but a room holds at most ${max} participants (SWITCHBOARD_ROOM_MAX_PARTICIPANTS)`,
      );
    }
    const plans: DialPlan[] = [];
    let fallbackFrom: string | undefined;
    for (const [index, target] of targets.entries()) {
      const to = (target.phoneNumber ?? target.sipUri)!;
      const field = `dialout_settings[${index}]`;
      const refusal = this.options.carrier.refusal(to);
      if (refusal) throw new ApiError('invalid-request-error', `${field}: ${refusal}`);
      let from: string;
      if (target.callerId !== undefined) {
        const row = await this.options.numbers.get(accountId, target.callerId);
        if (!row)
          throw new ApiError(
            'invalid-request-error',
            `${field}.callerId: no purchased number with id ${target.callerId} (callerId is the id from POST /v1/buy-phone-number, not the number)`,
          );
        from = row.number;
      } else {
        fallbackFrom ??= (await this.options.numbers.list(accountId, { kind: 'first' }, 1, {}))[0]?.number;
        if (!fallbackFrom)
          throw new ApiError(
            'invalid-request-error',
            `${field}: dial-out needs a number to call from; buy one with POST /v1/buy-phone-number`,
          );
        from = fallbackFrom;
      }
      plans.push({ to, from });
    }
    return plans;
  }

  /** Dials every planned target for the room, all at once. */
  start(room: DialoutRoom, plans: readonly DialPlan[]): void {
    if (plans.length === 0) return;
    room.expectDialouts(plans.length);
    room.onClose(() => this.roomClosed(room));
    for (const plan of plans) this.dial(room, plan);
  }

  /** The room a leg is for, when the carrier asks for its TwiML on answer; null for a leg that is unknown or over. */
  legFor(legId: string): { room: string } | null {
    const leg = this.legs.get(legId);
    return leg && leg.stage !== 'ended' && !leg.room.isClosed ? { room: leg.room.name } : null;
  }

  /** The answered leg's media stream: hand it to the room. False for an unknown or finished leg. */
  connect(legId: string, transport: AttachableTransport): boolean {
    const leg = this.legs.get(legId);
    if (!leg || leg.stage === 'ended' || leg.joined || leg.room.isClosed) return false;
    leg.joined = true;
    leg.stage = 'answered';
    this.options.metrics?.dialoutLeg('answered');
    leg.log.info('dial-out answered; callee joining the room');
    leg.room.addCallee(transport, leg.plan.to);
    return true;
  }

  /** A carrier status callback. Unknown legs are ignored (callbacks for a leg long over, or never ours). */
  onStatus(legId: string, callStatus: string, details: { durationSecs?: number; sipCode?: string }): void {
    const cancelled = this.cancelled.get(legId);
    if (cancelled) {
      if (!FINAL_STATUSES.has(callStatus)) return;
      // Counted and logged when the room cancelled it: the carrier only confirms.
      cancelled.leg.log.debug({ callStatus }, 'the carrier confirmed the end of a cancelled dial-out leg');
      this.forget(cancelled.leg);
      return;
    }
    const leg = this.legs.get(legId);
    if (!leg) return;
    if (callStatus === 'ringing' && leg.stage === 'dialling') leg.stage = 'ringing';
    if (callStatus === 'in-progress' || callStatus === 'answered') leg.stage = 'answered';
    if (!FINAL_STATUSES.has(callStatus)) {
      leg.log.debug({ callStatus }, 'dial-out progress');
      return;
    }
    if (callStatus === 'completed' && leg.joined) {
      leg.log.info({ durationSecs: details.durationSecs }, 'dial-out call completed');
      this.finish(leg, callStatus);
      return;
    }
    // Answered by the carrier but no media ever reached us counts as a failure of the leg.
    const outcome = callStatus === 'completed' ? 'completed without connecting' : callStatus;
    leg.log.warn({ outcome, sipCode: details.sipCode }, `dial-out to ${leg.plan.to} ended: ${outcome}`);
    this.finish(leg, outcome);
  }

  /** Whether this node placed the leg and it is still in flight (or awaits the carrier's last word). */
  holds(legId: string): boolean {
    return this.legs.has(legId) || this.cancelled.has(legId);
  }

  /** Legs in flight (for tests and logs). */
  get active(): number {
    return this.legs.size;
  }

  private dial(room: DialoutRoom, plan: DialPlan): void {
    const id = randomUUID();
    const log = this.options.log.child({ room: room.name, dialoutLeg: id, to: plan.to });
    const leg: Leg = { id, room, plan, stage: 'dialling', joined: false, log };
    this.legs.set(id, leg);
    const base = `${this.options.publicUrl}/twilio/dialout/${id}`;
    log.info({ from: plan.from }, 'dialling out');
    // Registered before the carrier hears of the leg, so its first callback finds this node.
    this.options.cluster
      .claim('dialout', id)
      .then((claimed) => {
        if (!claimed) throw new Error('the leg id is already registered in the cluster');
        // The room closed while the leg was being registered: never dial it.
        if (leg.stage === 'ended') {
          this.forget(leg);
          return;
        }
        return this.options.carrier
          .dial({
            to: plan.to,
            from: plan.from,
            answerUrl: base,
            statusUrl: `${base}/status`,
            ringTimeoutSecs: this.options.ringTimeoutSecs,
          })
          .then(
            ({ carrierRef }) => {
              leg.carrierRef = carrierRef;
              leg.log = log.child({ callSid: carrierRef });
              // The room closed while the carrier was queueing the call: take it back at once.
              if (leg.stage === 'ended') this.hangUp(leg, 'ringing');
            },
            (err: unknown) => {
              // Refused after its room cancelled it: already counted, and no callback will come.
              if (this.cancelled.has(id)) {
                log.debug({ err }, 'the carrier refused a dial-out leg its room had cancelled');
                this.forget(leg);
                return;
              }
              log.warn({ err }, `dial-out to ${plan.to} failed: the carrier refused the call`);
              this.finish(leg, 'failed');
            },
          );
      })
      .catch((err: unknown) => {
        if (this.cancelled.has(id)) {
          log.debug({ err }, 'a dial-out leg its room had cancelled could not be registered in the cluster');
          this.forget(leg);
          return;
        }
        log.error({ err }, `dial-out to ${plan.to} failed: the leg could not be registered in the cluster`);
        this.finish(leg, 'failed');
      });
  }

  private finish(leg: Leg, outcome: string): void {
    if (leg.stage === 'ended') return;
    leg.stage = 'ended';
    this.forget(leg);
    if (!leg.joined) this.options.metrics?.dialoutLeg(isLegOutcome(outcome) ? outcome : 'failed');
    if (!leg.joined && !leg.room.isClosed) leg.room.dialoutEnded(leg.plan.to, outcome);
  }

  /**
   * The room is gone. Joined legs end with their media stream (the room closes it, and nothing
   * follows the stream in their TwiML). Legs not yet joined end as `canceled`, counted and logged
   * here once, and are hung up at the carrier, whose own `canceled` callback follows.
   */
  private roomClosed(room: DialoutRoom): void {
    for (const leg of [...this.legs.values()]) {
      if (leg.room !== room) continue;
      const stage = leg.stage;
      leg.stage = 'ended';
      if (leg.joined || stage === 'ended') {
        this.forget(leg);
        continue;
      }
      this.legs.delete(leg.id);
      const timer = setTimeout(() => this.forget(leg), LAST_STATUS_WAIT_MS);
      timer.unref();
      this.cancelled.set(leg.id, { leg, timer });
      this.options.metrics?.dialoutLeg('canceled');
      leg.log.info(
        { outcome: 'canceled', reason: 'the room closed before the callee joined' },
        `dial-out to ${leg.plan.to} ended: canceled`,
      );
      this.hangUp(leg, stage === 'answered' ? 'answered' : 'ringing');
    }
  }

  /** Drops every trace of the leg on this node and in the cluster. */
  private forget(leg: Leg): void {
    this.legs.delete(leg.id);
    const cancelled = this.cancelled.get(leg.id);
    if (cancelled) {
      clearTimeout(cancelled.timer);
      this.cancelled.delete(leg.id);
    }
    this.options.cluster.release('dialout', leg.id);
  }

  private hangUp(leg: Leg, stage: OutboundCallStage): void {
    if (!leg.carrierRef) return;
    this.options.carrier
      .hangUp(leg.carrierRef, stage)
      .catch((err: unknown) => leg.log.warn({ err }, 'could not hang up the dial-out call'));
  }
}

function isLegOutcome(outcome: string): outcome is LegOutcome {
  return outcome === 'busy' || outcome === 'no-answer' || outcome === 'failed' || outcome === 'canceled';
}

import type { Logger } from 'pino';
import type { Clock } from '../../shared/clock.js';
import { twilioSignatureFor } from '../twilio-signature.js';
import { twilioSid } from '../twilio-sids.js';
import type { OutboundCallRequest } from './carrier.js';
import { sandboxNumber } from './sandbox-inventory.js';

/**
 * How a sandbox number behaves when called. Three numbers of every area code are reserved so
 * every outcome can be tried: 0197 never answers, 0198 is busy, 0199 fails as unreachable.
 */
export type CalleeBehaviour = 'answers' | 'no-answer' | 'busy' | 'unreachable';

export function calleeBehaviour(number: string): CalleeBehaviour {
  if (number.endsWith('5550197')) return 'no-answer';
  if (number.endsWith('5550198')) return 'busy';
  if (number.endsWith('5550199')) return 'unreachable';
  return 'answers';
}

/** The number a target reaches: itself, or a SIP URI's user part. */
export function dialledNumber(to: string): string {
  const sip = /^sips?:([^@;]+)@/.exec(to);
  return sip ? decodeURIComponent(sip[1]!) : to;
}

/** Why the sandbox cannot ring `to` (only its own fictional numbers are reachable), or undefined. */
export function sandboxRefusal(to: string): string | undefined {
  const number = dialledNumber(to);
  if (sandboxNumber(number)) return undefined;
  return `${number} is not a sandbox number: the sandbox carrier only reaches its fictional +1 NXX 555-01xx numbers (set SWITCHBOARD_CARRIER=twilio to ring real phones)`;
}

/** A real carrier takes a moment to ring; the sandbox rings for this long before the callee answers. */
export const SANDBOX_RING_MS = 1000;
/** Twilio's `<Dial>` rings a transfer target this long before giving up (its default `timeout`). */
export const SANDBOX_TRANSFER_RING_TIMEOUT_MS = 30_000;

/** An answered sandbox call, as the callee needs it to pick up. */
export interface AnsweredSandboxCall {
  callSid: string;
  from: string;
  to: string;
  /**
   * The answer webhook, whose TwiML names the media stream to open; absent on the leg a transfer
   * placed, which no bot answers: the transferred caller is put through to the callee.
   */
  answerUrl?: string;
  /** On a transfer's leg: the call whose caller was transferred. */
  transferredCallSid?: string;
  /** Signs the answer webhook as Twilio would, when set. */
  authToken?: string;
  /** Aborts when the service hangs up. */
  signal: AbortSignal;
  log: Logger;
  /** The calls' clock: the callee's audio runs on it, as the server's does. */
  clock: Clock;
}

/**
 * The far end of an answered sandbox call; resolves when it has hung up. The product has none of
 * its own: the composition root plugs one in (the simulated callee lives with the development
 * tools), so the server does not depend on the phone simulator.
 */
export type SandboxCallee = (call: AnsweredSandboxCall) => Promise<void>;

export interface SandboxCallOptions {
  /** Signs the status callbacks and the answer webhook, as Twilio would, when set. */
  authToken?: string;
  callee: SandboxCallee;
  log: Logger;
  /** The calls' clock: the sandbox's phones ring and talk on it (shared/clock.ts). */
  clock: Clock;
}

/**
 * One outbound call on the sandbox carrier, played the way Twilio plays it: status callbacks
 * (initiated, ringing, then in-progress and completed, or busy / no-answer / failed / canceled)
 * to the status URL; on answer, the plugged-in callee takes the answer URL's TwiML and media
 * stream.
 */
export class SandboxOutboundCall {
  readonly callSid = twilioSid('CA');
  private readonly abort = new AbortController();
  private sequence = 0;
  private answeredAt: number | undefined;
  private readonly log: Logger;

  constructor(
    private readonly request: OutboundCallRequest,
    private readonly options: SandboxCallOptions,
  ) {
    this.log = options.log.child({ callSid: this.callSid, to: request.to });
  }

  /** Hang up from the service's side: a ringing call is cancelled, an answered one ends. */
  hangUp(): void {
    this.abort.abort();
  }

  async run(): Promise<void> {
    const behaviour = calleeBehaviour(dialledNumber(this.request.to));
    await this.status('initiated');
    await this.status('ringing');
    const ringMs = behaviour === 'no-answer' ? this.request.ringTimeoutSecs * 1000 : SANDBOX_RING_MS;
    const rang = await this.options.clock.sleep(ringMs, this.abort.signal).then(
      () => true,
      () => false,
    );
    if (!rang) return this.status('canceled');
    if (behaviour === 'no-answer') return this.status('no-answer');
    if (behaviour === 'busy') return this.status('busy');
    if (behaviour === 'unreachable') return this.status('failed');
    await this.converse();
  }

  private async converse(): Promise<void> {
    this.answeredAt = this.options.clock.now();
    await this.status('in-progress');
    const { callSid, log } = this;
    const { from, to, answerUrl } = this.request;
    await this.options.callee({
      callSid,
      from,
      to,
      answerUrl,
      authToken: this.options.authToken,
      signal: this.abort.signal,
      log,
      clock: this.options.clock,
    });
    await this.status('completed');
  }

  /** One status callback, signed like Twilio's; a receiver that fails is logged, not retried. */
  private async status(callStatus: string): Promise<void> {
    const form: Record<string, string> = {
      AccountSid: `AC${'0'.repeat(32)}`,
      CallSid: this.callSid,
      CallStatus: callStatus,
      Direction: 'outbound-api',
      From: this.request.from,
      To: this.request.to,
      SequenceNumber: String(this.sequence++),
      Timestamp: new Date().toUTCString(),
    };
    if (this.answeredAt !== undefined && callStatus === 'completed')
      form.CallDuration = String(Math.round((this.options.clock.now() - this.answeredAt) / 1000));
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.options.authToken)
      headers['x-twilio-signature'] = twilioSignatureFor(this.options.authToken, this.request.statusUrl, form);
    try {
      const response = await fetch(this.request.statusUrl, {
        method: 'POST',
        headers,
        body: new URLSearchParams(form).toString(),
        signal: AbortSignal.timeout(5000),
      });
      await response.body?.cancel();
      if (!response.ok) this.log.warn({ status: response.status, callStatus }, 'sandbox status callback was refused');
    } catch (err) {
      this.log.warn({ err, callStatus }, 'sandbox status callback failed');
    }
  }
}

export type SandboxTransferOutcome = 'answered' | 'busy' | 'no-answer' | 'failed';

/**
 * The leg a cold transfer places on the sandbox: it rings `target` as `<Dial>` would (a second
 * of ringing, or the reserved numbers' busy / no answer / unreachable), and on answer the plugged-in
 * callee picks up the transferred caller. Resolves with how the leg went once it has ended.
 */
export class SandboxTransferLeg {
  readonly callSid = twilioSid('CA');
  private readonly log: Logger;

  constructor(
    private readonly transferred: { callSid: string; from: string; target: string },
    private readonly options: { callee: SandboxCallee; log: Logger; clock: Clock },
  ) {
    this.log = options.log.child({
      callSid: this.callSid,
      transferredCallSid: transferred.callSid,
      to: transferred.target,
    });
  }

  async run(): Promise<SandboxTransferOutcome> {
    const { target, from, callSid: transferredCallSid } = this.transferred;
    const behaviour = calleeBehaviour(dialledNumber(target));
    this.log.info({ callStatus: 'ringing' }, 'sandbox transfer: ringing the target');
    const ringMs = behaviour === 'no-answer' ? SANDBOX_TRANSFER_RING_TIMEOUT_MS : SANDBOX_RING_MS;
    await this.options.clock.sleep(ringMs);
    const outcome: SandboxTransferOutcome =
      behaviour === 'answers' ? 'answered' : behaviour === 'unreachable' ? 'failed' : behaviour;
    if (outcome !== 'answered') {
      this.log.info({ callStatus: outcome }, 'sandbox transfer: the target did not take the call');
      return outcome;
    }
    this.log.info({ callStatus: 'in-progress' }, 'sandbox transfer: the target answered');
    const answeredAt = this.options.clock.now();
    await this.options.callee({
      callSid: this.callSid,
      from,
      to: target,
      transferredCallSid,
      // The bot has left the call: nothing on our side hangs this leg up.
      signal: new AbortController().signal,
      log: this.log,
      clock: this.options.clock,
    });
    this.log.info(
      { callStatus: 'completed', durationMs: Math.round(this.options.clock.now() - answeredAt) },
      'sandbox transfer: the target hung up',
    );
    return outcome;
  }
}

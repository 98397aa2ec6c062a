import type { Logger } from 'pino';
import type { AddressPolicy } from '../security/address-policy.js';
import { pinlessSignature, postJson } from '../security/webhook-client.js';
import type { CallSummaryView } from './call-record.js';

/** The configuration's `status_callback`. */
export interface StatusCallbackTarget {
  url: string;
  /** base64 signing secret. */
  hmac: string;
}

export interface StatusCallbacksOptions {
  policy: AddressPolicy;
  log: Logger;
  /** Waits before each retry; its length is the number of retries. */
  retryDelaysMs?: readonly number[];
  attemptTimeoutMs?: number;
}

/** About 2 minutes of retries: a receiver restarting is back by then. */
const DEFAULT_RETRY_DELAYS_MS = [1000, 2000, 4000, 8000, 16_000, 32_000, 64_000];
const DEFAULT_ATTEMPT_TIMEOUT_MS = 5000;

/** What the receiver gets. */
export interface StatusCallbackBody {
  event: 'call.ended';
  call: CallSummaryView;
}

/**
 * Posts the end-of-call summary to a configuration's status_callback, signed as the other customer
 * webhooks are (X-Switchboard-Timestamp, X-Switchboard-Signature: base64 HMAC-SHA256 of
 * `timestamp.body` with the configuration's secret), through the same address policy. A 2xx is
 * delivered; anything else is retried with backoff. Nothing waits for it: the call has ended
 * already, and a shutdown stops the retries (what is in flight ends on its own timeout).
 */
export class StatusCallbacks {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;
  private readonly retryDelaysMs: readonly number[];
  private readonly attemptTimeoutMs: number;

  constructor(private readonly options: StatusCallbacksOptions) {
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  }

  send(target: StatusCallbackTarget, call: CallSummaryView): void {
    if (this.closed) return;
    const body: StatusCallbackBody = { event: 'call.ended', call };
    this.attempt(target, JSON.stringify(body), call.id, 0);
  }

  /** No new deliveries or retries from now on. */
  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private attempt(target: StatusCallbackTarget, raw: string, callId: string, attempt: number): void {
    if (this.closed) return;
    const log = this.options.log;
    const timestamp = String(Math.floor(Date.now() / 1000));
    postJson(
      target.url,
      raw,
      {
        'x-switchboard-timestamp': timestamp,
        'x-switchboard-signature': pinlessSignature(target.hmac, timestamp, raw),
      },
      { policy: this.options.policy, timeoutMs: this.attemptTimeoutMs },
    ).then(
      (result) => {
        if (result.status >= 200 && result.status < 300) {
          log.info({ callId, status: result.status, attempt: attempt + 1 }, 'status callback delivered');
          return;
        }
        this.retry(target, raw, callId, attempt, `answered ${result.status}`);
      },
      (err: unknown) => this.retry(target, raw, callId, attempt, err instanceof Error ? err.message : String(err)),
    );
  }

  private retry(target: StatusCallbackTarget, raw: string, callId: string, attempt: number, why: string): void {
    const delayMs = this.retryDelaysMs[attempt];
    if (delayMs === undefined || this.closed) {
      this.options.log.warn(
        { callId, attempts: attempt + 1, why, url: target.url },
        this.closed ? 'status callback not delivered before shutdown' : 'status callback given up',
      );
      return;
    }
    this.options.log.warn(
      { callId, attempt: attempt + 1, why, retryInMs: delayMs },
      'status callback failed; retrying',
    );
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.attempt(target, raw, callId, attempt + 1);
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }
}

import { randomUUID } from 'node:crypto';
import { ApiError } from '../shared/api-error.js';
import type { Coordinator } from './coordinator.js';

/**
 * SWITCHBOARD_ACCOUNT_MAX_CALLS: how many calls (phone calls and rooms) one account may have at
 * once, counted across the cluster by the coordinator. Without the limit nothing is counted.
 */
export class AccountCalls {
  constructor(
    private readonly cluster: Coordinator,
    private readonly maxCalls: number | undefined,
  ) {}

  /**
   * Takes one of the account's call slots; returns the function that gives it back (call it once
   * the call has ended). Throws a 429 ApiError when the account is at its limit.
   */
  async take(accountId: string): Promise<() => void> {
    if (this.maxCalls === undefined) return () => undefined;
    const id = randomUUID();
    if (!(await this.cluster.claim(`calls:${accountId}`, id, this.maxCalls))) {
      throw new ApiError(
        'rate-limit-error',
        `this account already has its maximum of ${this.maxCalls} calls in progress; try again when one has ended`,
      );
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.cluster.release(`calls:${accountId}`, id);
    };
  }
}

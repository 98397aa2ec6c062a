import type { Clock, ClockTimer } from '../shared/clock.js';

/** How long key presses gather before they go to the model as one input. */
export const DTMF_GATHER_MS = 1500;

/**
 * Collects a caller's key presses into one input, as phone menus do: the digits typed within
 * DTMF_GATHER_MS of each other, or up to and including `#`.
 */
export class DtmfGatherer {
  private digits = '';
  private timer: ClockTimer | undefined;

  /** `clock`: the call's: the caller's key presses are timed on it. */
  constructor(
    private readonly onInput: (digits: string) => void,
    private readonly clock: Clock,
  ) {}

  press(digit: string): void {
    this.digits += digit;
    this.clock.clearTimeout(this.timer);
    if (digit === '#') this.flush();
    else this.timer = this.clock.setTimeout(() => this.flush(), DTMF_GATHER_MS);
  }

  dispose(): void {
    this.clock.clearTimeout(this.timer);
    this.digits = '';
  }

  private flush(): void {
    this.clock.clearTimeout(this.timer);
    const digits = this.digits;
    this.digits = '';
    if (digits.length > 0) this.onInput(digits);
  }
}

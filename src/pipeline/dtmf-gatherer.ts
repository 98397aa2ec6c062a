/** How long key presses gather before they go to the model as one input. */
export const DTMF_GATHER_MS = 1500;

/**
 * Collects a caller's key presses into one input, as phone menus do: the digits typed within
 * DTMF_GATHER_MS of each other, or up to and including `#`.
 */
export class DtmfGatherer {
  private digits = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly onInput: (digits: string) => void) {}

  press(digit: string): void {
    this.digits += digit;
    clearTimeout(this.timer);
    if (digit === '#') this.flush();
    else this.timer = setTimeout(() => this.flush(), DTMF_GATHER_MS);
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.digits = '';
  }

  private flush(): void {
    clearTimeout(this.timer);
    const digits = this.digits;
    this.digits = '';
    if (digits.length > 0) this.onInput(digits);
  }
}

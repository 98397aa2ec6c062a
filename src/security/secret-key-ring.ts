import { keyFingerprint } from './key-fingerprint.js';

/** How often a running node re-reads which key seals and, for keys kept in the store, the keys themselves. */
export const KEY_REFRESH_MS = 2000;

/** What a refresh reads: the keys this node may open with, and the fingerprint of the one the store seals with. */
export interface KeyRingState {
  keys: readonly Buffer[];
  sealingFingerprint: string | undefined;
}

/**
 * The secret keys a node opens sealed values with, and the one it seals with. Usually one key.
 * While `switchboard db rotate-key secret` runs it holds the old and the new key: every node opens
 * values sealed with either, and seals with the one the store's fingerprint names, so values
 * re-sealed on one node stay readable on all of them throughout (security/key-rotation.ts).
 */
export class SecretKeyRing {
  private keys: readonly Buffer[];
  private sealingKey: Buffer;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    keys: readonly Buffer[],
    sealingKey: Buffer,
    /** Reads the current state from the store; without it the ring never changes. */
    private readonly reload?: () => Promise<KeyRingState>,
  ) {
    this.keys = keys;
    this.sealingKey = sealingKey;
  }

  /** The key new values are sealed with. */
  sealing(): Buffer {
    return this.sealingKey;
  }

  /** Every key a sealed value may open with, the sealing key first. */
  readable(): readonly Buffer[] {
    return [this.sealingKey, ...this.keys.filter((k) => !k.equals(this.sealingKey))];
  }

  /** Takes up a rotation's changes. A store that cannot be read leaves the ring as it was. */
  async refresh(): Promise<void> {
    if (!this.reload) return;
    const state = await this.reload();
    if (state.keys.length > 0) this.keys = state.keys;
    const sealing = this.keys.find((k) => keyFingerprint(k) === state.sealingFingerprint);
    if (sealing) this.sealingKey = sealing;
  }

  /** Refreshes every KEY_REFRESH_MS until stop(); never keeps the process alive. */
  startRefreshing(intervalMs = KEY_REFRESH_MS): void {
    if (!this.reload || this.timer) return;
    let running = false;
    this.timer = setInterval(() => {
      if (running) return;
      running = true;
      // A failed read (the database away for a moment) is retried on the next tick.
      this.refresh()
        .catch(() => undefined)
        .finally(() => {
          running = false;
        });
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}

/**
 * What can go wrong with a vendor, played by an emulator on its next handshakes, requests,
 * connections or replies. Every emulator takes its faults the same way:
 * `emulator.faults.next({ kind: 'reject', status: 429 })`, optionally for several occasions or
 * one path (`{ count: Infinity, path: '/v1/speak' }`). Each emulator documents which kinds it
 * plays and where; a kind it does not play stays planned and does nothing.
 */
export type Fault =
  /** The handshake or request is refused with this HTTP status and the vendor's error body (or `body`). */
  | { kind: 'reject'; status: number; message?: string; body?: unknown }
  /** The handshake or request is read and never answered: no upgrade, no headers, no bytes. */
  | { kind: 'hang' }
  /** The handshake is answered only this long after it arrived (a slow TLS handshake, a far region). */
  | { kind: 'delay'; delayMs: number }
  /** Accepted, then silent: a connection or reply that never answers, or a stream that stops after `afterTokens`. */
  | { kind: 'stall'; afterTokens?: number }
  /** The connection is dropped (no close frame, as on a network failure) this long after it opens. */
  | { kind: 'drop'; afterMs: number }
  /** The vendor's error message instead of the answer, or in the stream after `afterTokens`. */
  | { kind: 'error'; afterTokens?: number }
  /** A message that is not what the protocol says (broken JSON, an unknown type), before or in the answer. */
  | { kind: 'malformed'; afterTokens?: number };

export type FaultKind = Fault['kind'];
export type FaultOf<K extends FaultKind> = Extract<Fault, { kind: K }>;

export interface FaultScope<P extends string = string> {
  /** Only on this path (an emulator serving several endpoints); every path by default. */
  path?: P;
  /** How many occasions it applies to. Default 1; Infinity for all. */
  count?: number;
}

type Planned<P extends string> = Fault & { path: P | undefined; remaining: number };

/** The faults an emulator will play, in the order they were planned. */
export class FaultPlan<P extends string = string> {
  private planned: Array<Planned<P>> = [];

  /** Plays `fault` on the next occasion (or the next `scope.count`) where it applies. */
  next(fault: Fault, scope: FaultScope<P> = {}): void {
    this.planned.push({ ...fault, path: scope.path, remaining: scope.count ?? 1 });
  }

  /** The first planned fault of these kinds for `path`, used up by one occasion; undefined when none. */
  take<K extends FaultKind>(kinds: readonly K[], path?: P): FaultOf<K> | undefined {
    const fault = this.planned.find(
      (f) => (kinds as readonly FaultKind[]).includes(f.kind) && (!f.path || f.path === path),
    );
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.planned = this.planned.filter((f) => f !== fault);
    return fault as unknown as FaultOf<K>;
  }

  /** Forgets every fault not played yet. */
  clear(): void {
    this.planned = [];
  }
}

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { LocalCoordinator } from '../cluster/coordinator.js';
import type { PhoneNumbersRepo } from '../store/phone-numbers-repo.js';
import type { Carrier, OutboundCallRequest, OutboundCallStage } from '../telephony/carrier/carrier.js';
import { type AttachableTransport, type DialoutRoom, DialoutService, type LegOutcome } from './dialout-service.js';

/** A carrier whose dial() answers when the test says so, recording what it was asked. */
class ControlledCarrier implements Pick<Carrier, 'dial' | 'hangUp' | 'refusal'> {
  readonly dialled: OutboundCallRequest[] = [];
  readonly hungUp: Array<{ ref: string; stage: OutboundCallStage }> = [];
  private pending: Array<{ resolve: (value: { carrierRef: string }) => void; reject: (err: Error) => void }> = [];

  dial(request: OutboundCallRequest): Promise<{ carrierRef: string }> {
    this.dialled.push(request);
    return new Promise((resolve, reject) => this.pending.push({ resolve, reject }));
  }

  async hangUp(ref: string, stage: OutboundCallStage): Promise<void> {
    this.hungUp.push({ ref, stage });
  }

  refusal(): undefined {
    return undefined;
  }

  queue(index: number, ref: string): void {
    this.pending[index]!.resolve({ carrierRef: ref });
  }

  refuse(index: number): void {
    this.pending[index]!.reject(new Error('twilio call failed (HTTP 400): invalid To'));
  }
}

class FakeRoom implements DialoutRoom {
  readonly name = 'room-1';
  isClosed = false;
  expected = 0;
  readonly callees: string[] = [];
  readonly ended: Array<{ to: string; outcome: string }> = [];
  private listeners: Array<() => void> = [];

  expectDialouts(count: number): void {
    this.expected += count;
  }

  addCallee(_transport: AttachableTransport, to: string): void {
    this.callees.push(to);
  }

  dialoutEnded(to: string, outcome: string): void {
    this.ended.push({ to, outcome });
  }

  onClose(listener: () => void): void {
    this.listeners.push(listener);
  }

  close(): void {
    this.isClosed = true;
    for (const listener of this.listeners) listener();
  }
}

function setUp() {
  const carrier = new ControlledCarrier();
  const outcomes: LegOutcome[] = [];
  const cluster = new LocalCoordinator('node-1');
  const service = new DialoutService({
    carrier: carrier as unknown as Carrier,
    numbers: {} as PhoneNumbersRepo,
    publicUrl: 'https://sb.example.com',
    ringTimeoutSecs: 30,
    maxParticipants: 4,
    log: pino({ level: 'silent' }),
    cluster,
    metrics: { dialoutLeg: (outcome) => outcomes.push(outcome) },
  });
  const room = new FakeRoom();
  return { carrier, service, room, outcomes, cluster };
}

/** Lets the legs' registration in the cluster (and whatever follows it) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

const legIdOf = (request: OutboundCallRequest) => request.answerUrl.split('/').pop()!;
const transport = {} as AttachableTransport;

describe('DialoutService', () => {
  it('dials every target with its answer and status URLs, and joins the answered leg to the room', async () => {
    const { carrier, service, room, outcomes, cluster } = setUp();
    service.start(room, [
      { to: '+14155550123', from: '+12125550101' },
      { to: 'sip:+14155550124@pbx.example.com', from: '+12125550101' },
    ]);
    expect(room.expected).toBe(2);
    await settle();
    expect(carrier.dialled.map((r) => r.to)).toEqual(['+14155550123', 'sip:+14155550124@pbx.example.com']);
    const [first] = carrier.dialled;
    expect(first).toMatchObject({ from: '+12125550101', ringTimeoutSecs: 30 });
    expect(first!.answerUrl).toMatch(/^https:\/\/sb\.example\.com\/twilio\/dialout\/[0-9a-f-]{36}$/);
    expect(first!.statusUrl).toBe(`${first!.answerUrl}/status`);

    const legId = legIdOf(first!);
    // Every leg is known to the cluster as this node's, so callbacks landing elsewhere come here.
    expect(await cluster.holderOf('dialout', legId)).toEqual({ self: true });
    expect(service.holds(legId)).toBe(true);
    carrier.queue(0, 'CA1');
    service.onStatus(legId, 'ringing', {});
    expect(service.legFor(legId)).toEqual({ room: 'room-1' });
    expect(service.connect(legId, transport)).toBe(true);
    expect(room.callees).toEqual(['+14155550123']);
    // A second stream for the same leg is refused.
    expect(service.connect(legId, transport)).toBe(false);
    expect(outcomes).toEqual(['answered']);
    service.onStatus(legId, 'completed', {});
    expect(await cluster.holderOf('dialout', legId)).toBeUndefined();
    expect(service.holds(legId)).toBe(false);
  });

  it('reports busy, unanswered and refused legs to the room once, and forgets them', async () => {
    const { carrier, service, room, outcomes } = setUp();
    service.start(room, [
      { to: '+14155550198', from: '+1' },
      { to: '+14155550197', from: '+1' },
      { to: '+4420', from: '+1' },
    ]);
    await settle();
    const [busy, unanswered] = carrier.dialled.map(legIdOf);
    service.onStatus(busy!, 'busy', {});
    service.onStatus(busy!, 'completed', {});
    service.onStatus(unanswered!, 'no-answer', {});
    carrier.refuse(2);
    await settle();
    expect(room.ended).toEqual([
      { to: '+14155550198', outcome: 'busy' },
      { to: '+14155550197', outcome: 'no-answer' },
      { to: '+4420', outcome: 'failed' },
    ]);
    expect(outcomes).toEqual(['busy', 'no-answer', 'failed']);
    expect(service.active).toBe(0);
    expect(service.legFor(busy!)).toBeNull();
    expect(service.connect(busy!, transport)).toBe(false);
  });

  it('cancels ringing legs when the room closes, including one the carrier had not queued yet', async () => {
    const { carrier, service, room } = setUp();
    service.start(room, [
      { to: '+14155550123', from: '+1' },
      { to: '+14155550124', from: '+1' },
    ]);
    await settle();
    carrier.queue(0, 'CA-ringing');
    await settle();
    service.onStatus(legIdOf(carrier.dialled[0]!), 'ringing', {});
    room.close();
    expect(carrier.hungUp).toEqual([{ ref: 'CA-ringing', stage: 'ringing' }]);
    // The carrier answers the second dial only now: it is hung up at once.
    carrier.queue(1, 'CA-late');
    await settle();
    expect(carrier.hungUp).toEqual([
      { ref: 'CA-ringing', stage: 'ringing' },
      { ref: 'CA-late', stage: 'ringing' },
    ]);
    // Nothing is reported to a closed room, and late callbacks are ignored.
    service.onStatus(legIdOf(carrier.dialled[0]!), 'canceled', {});
    expect(room.ended).toEqual([]);
    expect(service.active).toBe(0);
  });

  it('counts and logs a leg cancelled by its room closing once, as canceled; the carrier’s canceled callback adds nothing', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const { carrier, room, outcomes, cluster } = setUp();
    const service = new DialoutService({
      carrier: carrier as unknown as Carrier,
      numbers: {} as PhoneNumbersRepo,
      publicUrl: 'https://sb.example.com',
      ringTimeoutSecs: 30,
      maxParticipants: 4,
      log: pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) }),
      cluster,
      metrics: { dialoutLeg: (outcome) => outcomes.push(outcome) },
    });
    service.start(room, [
      { to: '+14155550123', from: '+1' },
      { to: '+14155550124', from: '+1' },
    ]);
    await settle();
    carrier.queue(0, 'CA-ringing');
    carrier.queue(1, 'CA-answered');
    await settle();
    const [ringing, answered] = carrier.dialled.map(legIdOf);
    service.onStatus(ringing!, 'ringing', {});
    service.onStatus(answered!, 'answered', {});
    room.close();
    expect(outcomes).toEqual(['canceled', 'canceled']);
    expect(carrier.hungUp).toEqual([
      { ref: 'CA-ringing', stage: 'ringing' },
      { ref: 'CA-answered', stage: 'answered' },
    ]);
    // The carrier's callbacks after the cancel still come to this node, and count nothing more.
    expect(service.holds(ringing!)).toBe(true);
    expect(await cluster.holderOf('dialout', ringing!)).toEqual({ self: true });
    service.onStatus(ringing!, 'canceled', {});
    service.onStatus(ringing!, 'canceled', {});
    service.onStatus(answered!, 'completed', {});
    expect(outcomes).toEqual(['canceled', 'canceled']);
    expect(room.ended).toEqual([]);
    const ended = lines.filter((l) => typeof l.msg === 'string' && (l.msg as string).includes('ended:'));
    expect(ended.map((l) => l.msg)).toEqual([
      'dial-out to +14155550123 ended: canceled',
      'dial-out to +14155550124 ended: canceled',
    ]);
    expect(ended[0]).toMatchObject({ outcome: 'canceled', dialoutLeg: ringing });
    // Once the carrier has confirmed, nothing of the legs is left.
    expect(service.holds(ringing!)).toBe(false);
    expect(service.holds(answered!)).toBe(false);
    expect(await cluster.holderOf('dialout', ringing!)).toBeUndefined();
  });

  it('never dials a leg whose room closed while the leg was being registered', async () => {
    const { carrier, service, room, cluster, outcomes } = setUp();
    service.start(room, [{ to: '+14155550123', from: '+1' }]);
    room.close();
    await settle();
    expect(carrier.dialled).toEqual([]);
    expect(service.active).toBe(0);
    expect(outcomes).toEqual(['canceled']);
    // Nothing of the leg is left registered: the cluster holds no dial-out leg at all.
    expect(await cluster.claim('dialout', 'probe', 1)).toBe(true);
  });

  it('refuses more targets than a room can hold before dialling anything', async () => {
    const { carrier, service } = setUp();
    const targets = Array.from({ length: 4 }, (_, i) => ({ phoneNumber: `+1415555012${i}` }));
    await expect(service.plan('acct', targets, 1)).rejects.toThrow(
      '4 targets plus 1 caller, but a room holds at most 4 participants',
    );
    expect(carrier.dialled).toEqual([]);
  });
});

import type { AvailableNumber } from './carrier.js';

/**
 * The sandbox carrier's numbers: the +1 NXX 555 0100-0199 block of a few area codes, which North
 * American numbering reserves for fiction, so a sandbox number can never ring a real phone.
 */
const AREAS: ReadonlyArray<{ areacode: string; region: string; city: string }> = [
  { areacode: '212', region: 'NY', city: 'New York' },
  { areacode: '415', region: 'CA', city: 'San Francisco' },
  { areacode: '213', region: 'CA', city: 'Los Angeles' },
  { areacode: '305', region: 'FL', city: 'Miami' },
  { areacode: '312', region: 'IL', city: 'Chicago' },
  { areacode: '206', region: 'WA', city: 'Seattle' },
  { areacode: '512', region: 'TX', city: 'Austin' },
  { areacode: '617', region: 'MA', city: 'Boston' },
];

export const SANDBOX_INVENTORY: readonly AvailableNumber[] = AREAS.flatMap(({ areacode, region, city }) =>
  Array.from({ length: 100 }, (_, i) => ({ number: `+1${areacode}55501${String(i).padStart(2, '0')}`, region, city })),
);

const BY_NUMBER = new Map(SANDBOX_INVENTORY.map((entry) => [entry.number, entry]));

export function sandboxNumber(number: string): AvailableNumber | undefined {
  return BY_NUMBER.get(number);
}

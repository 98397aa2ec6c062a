/** A JSON object (not null, not an array): what hand-written checks of parsed messages start from. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

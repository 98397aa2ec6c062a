/** The useful words of a failed request: fetch says "fetch failed" and keeps ECONNREFUSED and the like in its cause. */
export function networkErrorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error && cause.message) return cause.message;
  return err.message;
}

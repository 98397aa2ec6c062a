/**
 * Query parameters that carry credentials: download-link signatures, room tokens, presigned
 * bucket URLs (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token; Azure's `sig`), OAuth tokens,
 * API keys.
 * Matched by name, so a vendor's own spelling is caught too; `expires` and the like are kept.
 */
const CREDENTIAL_PARAM = /signature|^sig$|token|key|secret|passw|credential|auth/i;

export const REDACTED = '[redacted]';

function isCredentialName(rawName: string): boolean {
  let name = rawName;
  try {
    name = decodeURIComponent(rawName.replace(/\+/g, ' '));
  } catch {
    // A malformed escape: judge the name as written.
  }
  return CREDENTIAL_PARAM.test(name);
}

/**
 * `url` (absolute, or a request's path and query) with the values of credential parameters and
 * any password in its userinfo replaced by `[redacted]`; the path and other parameters stay as
 * they were, so the log still says what was asked for.
 */
export function redactUrl(url: string): string {
  const hashAt = url.indexOf('#');
  const beforeHash = hashAt === -1 ? url : url.slice(0, hashAt);
  const queryAt = beforeHash.indexOf('?');
  const base = (queryAt === -1 ? beforeHash : beforeHash.slice(0, queryAt)).replace(
    /^([a-z][a-z0-9+.-]*:\/\/[^/?#@:]*):[^/?#@]*@/i,
    `$1:${REDACTED}@`,
  );
  if (queryAt === -1) return base;
  const query = beforeHash
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      return eq !== -1 && isCredentialName(name) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  // A fragment never reaches a server; one in a logged URL is dropped rather than judged.
  return `${base}?${query}`;
}

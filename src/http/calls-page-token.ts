import type { UrlSigner } from '../security/url-signer.js';

/** Tokens of the calls page's signed links start with this; API keys never do. */
export const PAGE_TOKEN_PREFIX = 'swpage.';

/**
 * The calls page's signed links: `swpage.<account id>.<expires unix secs>.<signature>`, sent as a
 * Bearer token by the page. It reads one account's calls and recordings until it expires,
 * without the API key ever being put in a link.
 */
export class PageTokens {
  constructor(private readonly signer: UrlSigner) {}

  issue(accountId: string, expiresSecs: number): string {
    return `${PAGE_TOKEN_PREFIX}${accountId}.${expiresSecs}.${this.signer.sign(payload(accountId, expiresSecs))}`;
  }

  /** The account the token is for, or undefined when it is forged, malformed or expired. */
  verify(token: string): string | undefined {
    const parts = token.slice(PAGE_TOKEN_PREFIX.length).split('.');
    if (parts.length !== 3) return undefined;
    const [accountId, expires, signature] = parts as [string, string, string];
    const expiresSecs = Number(expires);
    if (!Number.isInteger(expiresSecs) || expiresSecs * 1000 < Date.now()) return undefined;
    return this.signer.verify(payload(accountId, expiresSecs), signature) ? accountId : undefined;
  }
}

function payload(accountId: string, expiresSecs: number): string {
  return `calls-page\n${accountId}\n${expiresSecs}`;
}

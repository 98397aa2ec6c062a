import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashApiKey } from '../store/api-key-hash.js';
import type { Account, AccountsRepo } from '../store/accounts-repo.js';
import { AUTH_ERRORS, addErrorResponses } from './error-responses.js';
import { ApiError } from '../shared/api-error.js';
import { PAGE_TOKEN_PREFIX, type PageTokens } from './calls-page-token.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account of the request's API key; set on every /v1 route. */
    account: Account;
  }
}

export interface AuthDeps {
  accounts: AccountsRepo;
  /** Hashes of the SWITCHBOARD_API_KEY keys, which belong to the default account. */
  envKeyHashes: ReadonlySet<string>;
  defaultAccount: Account;
  /** The calls page's signed links: read-only access to the calls and recordings of one account. */
  pageTokens?: PageTokens;
}

/** What a calls-page token may read: the calls and their recordings, nothing else, never a write. */
const PAGE_TOKEN_ROUTES = /^\/v1\/(calls|recordings)(\/|\?|$)/;

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export async function authenticate(request: FastifyRequest, deps: AuthDeps): Promise<Account> {
  const header = request.headers.authorization;
  if (header === undefined || header.trim() === '') {
    throw new ApiError('authorization-header-error', 'send the header Authorization: Bearer <API_KEY>');
  }
  const match = BEARER.exec(header);
  if (!match?.[1]) {
    throw new ApiError('authorization-header-error', 'the Authorization header must have the form "Bearer <API_KEY>"');
  }
  if (match[1].startsWith(PAGE_TOKEN_PREFIX) && deps.pageTokens) {
    const accountId = deps.pageTokens.verify(match[1]);
    if (!accountId) throw new ApiError('authentication-error', 'the calls page link is not valid or has expired');
    if (request.method !== 'GET' || !PAGE_TOKEN_ROUTES.test(request.url))
      throw new ApiError('forbidden-error', 'a calls page link only reads calls and recordings');
    const account = await deps.accounts.findAccountById(accountId);
    if (!account) throw new ApiError('authentication-error', 'the calls page link is not valid');
    return account;
  }
  const keyHash = hashApiKey(match[1]);
  if (deps.envKeyHashes.has(keyHash)) return deps.defaultAccount;
  const account = await deps.accounts.findAccountByKeyHash(keyHash);
  if (!account) throw new ApiError('authentication-error', 'the API key is not valid');
  return account;
}

/** Registers the Bearer check on every route of the (encapsulated) instance it is called on, and documents its errors there. */
export function requireApiKey(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('account', null as unknown as Account);
  app.addHook('onRoute', (route) => {
    route.schema ??= {};
    addErrorResponses(route.schema, AUTH_ERRORS);
  });
  app.addHook('onRequest', async (request) => {
    request.account = await authenticate(request, deps);
  });
}

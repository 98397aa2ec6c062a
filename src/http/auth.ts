import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashApiKey } from '../store/api-key-hash.js';
import type { Account, AccountsRepo } from '../store/accounts-repo.js';
import { AUTH_ERRORS, addErrorResponses } from './error-responses.js';
import { ApiError } from '../shared/api-error.js';

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
}

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

import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '../shared/api-error.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { type SecretBox, SealedSecretError } from '../security/secret-box.js';
import type { Account } from '../store/accounts-repo.js';
import type { DialinConfigsRepo } from '../store/dialin-configs-repo.js';
import type { PhoneNumbersRepo } from '../store/phone-numbers-repo.js';
import { pinlessSignature, postJson, webhookUrlProblem } from '../security/webhook-client.js';

/** One stored pinless dial-in entry: what the customer sent, plus its secret and SIP address. */
export interface PinlessEntry {
  phone_number?: string;
  room_creation_api: string;
  name_prefix?: string;
  hmac: string;
  hold_music_url?: string;
  timeout_config?: { message?: string };
  sip_uri: string;
}

const base64Secret = z
  .string()
  .min(4)
  .max(1024)
  .refine((v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length % 4 === 0 && Buffer.from(v, 'base64').length >= 16, {
    message: 'must be Base-64 encoding at least 16 bytes',
  });

const entryInput = z
  .object({
    phone_number: z
      .string()
      .regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number such as +14155550123')
      .optional(),
    room_creation_api: z.string().max(2048),
    name_prefix: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1–64 letters, digits, - or _')
      .optional(),
    hmac: base64Secret.optional(),
    hold_music_url: z.string().max(2048).optional(),
    timeout_config: z
      .object({ message: z.string().min(1).max(500).optional() })
      .strict()
      .optional(),
  })
  .strict();

/** Body of POST /v1/ (endpoint 9). */
export const domainConfigBody = z
  .object({ properties: z.object({ pinless_dialin: z.array(entryInput).max(100) }).strict() })
  .strict();

export type DomainConfigBody = z.output<typeof domainConfigBody>;

/** The domain object endpoint 9 answers with (and GET /v1/ reads). */
export interface DomainView {
  domain_name: string;
  domain_id: string;
  config: { pinless_dialin: PinlessEntry[] };
}

const VERIFY_TIMEOUT_MS = 5000;

/**
 * Pinless dial-in configuration per account. Setting it replaces every entry, gives entries
 * without an `hmac` a fresh secret each time (as the hosted service did), and sends each
 * room_creation_api a signed verification POST in the background; the reply is only logged.
 */
export class PinlessConfigService {
  constructor(
    private readonly repo: DialinConfigsRepo,
    private readonly numbers: PhoneNumbersRepo,
    private readonly secrets: SecretBox,
    private readonly sipHost: string,
    private readonly policy: AddressPolicy,
    private readonly log: Logger,
  ) {}

  async get(account: Account): Promise<DomainView> {
    const sealed = await this.repo.get(account.id);
    const entries = sealed ? this.openEntries(sealed) : [];
    if (entries === undefined) {
      this.log.error(
        { accountId: account.id },
        'pinless dial-in entries cannot be opened with this server’s secret key',
      );
      throw new ApiError(
        'server-error',
        `domain ${account.domainId}: config.pinless_dialin cannot be opened: the entries were sealed with a secret key this server does not hold (SWITCHBOARD_SECRET_KEY); ` +
          'the operator must give this node the store’s key, or you can set them again (POST /v1/)',
      );
    }
    return this.view(account, entries);
  }

  async set(account: Account, body: DomainConfigBody): Promise<DomainView> {
    const issues: string[] = [];
    const seen = new Set<string>();
    const entries: PinlessEntry[] = [];
    for (const [index, input] of body.properties.pinless_dialin.entries()) {
      const path = `properties.pinless_dialin.${index}`;
      const apiProblem = webhookUrlProblem(input.room_creation_api, this.policy);
      if (apiProblem) issues.push(`${path}.room_creation_api: ${apiProblem}`);
      const musicProblem = input.hold_music_url ? webhookUrlProblem(input.hold_music_url, this.policy) : undefined;
      if (musicProblem) issues.push(`${path}.hold_music_url: ${musicProblem}`);
      if (input.phone_number) {
        if (seen.has(input.phone_number)) issues.push(`${path}.phone_number: ${input.phone_number} appears twice`);
        seen.add(input.phone_number);
        const holder = await this.numbers.findByNumber(input.phone_number);
        if (holder?.account_id !== account.id)
          issues.push(`${path}.phone_number: ${input.phone_number} is not one of your purchased numbers`);
      } else {
        // SIP interconnect entries are told apart by their webhook and prefix.
        const identity = `${input.room_creation_api}|${input.name_prefix ?? ''}`;
        if (seen.has(identity))
          issues.push(
            `${path}: another entry without phone_number has the same room_creation_api and name_prefix; give it a different name_prefix`,
          );
        seen.add(identity);
      }
      entries.push({
        ...input,
        hmac: input.hmac ?? randomBytes(32).toString('base64'),
        sip_uri: `sip:${sipUser(account.domainId, input)}@${this.sipHost}`,
      });
    }
    if (issues.length > 0) throw new ApiError('invalid-request-error', issues.join('; '));
    await this.repo.put(account.id, this.secrets.seal(JSON.stringify(entries)));
    for (const entry of entries) void this.verify(entry);
    return this.view(account, entries);
  }

  /**
   * The entry that answers calls to `to`, with its account, for the inbound call path: a phone
   * number, or (SIP interconnect) an address whose user part is an entry's sip_uri user. Only the
   * user part is compared, since a carrier's SIP domain puts its own host after the `@`.
   */
  async findByAddress(to: string): Promise<{ accountId: string; entry: PinlessEntry } | undefined> {
    const user = sipUserOf(to);
    if (user === undefined) {
      // Only the account that holds the number now: an entry left behind by an account that
      // released it must never receive the calls of the number's next owner.
      const holder = await this.numbers.findByNumber(to);
      if (!holder) return undefined;
      const sealed = await this.repo.get(holder.account_id);
      const entries = sealed ? this.openForCall(holder.account_id, sealed) : [];
      const entry = entries.find((e) => e.phone_number === to);
      return entry ? { accountId: holder.account_id, entry } : undefined;
    }
    // One account's unreadable entries must not stop the others' SIP calls.
    for (const { accountId, entriesSealed } of await this.repo.all()) {
      const entry = this.openForCall(accountId, entriesSealed).find((e) => sipUserOf(e.sip_uri) === user);
      if (entry) return { accountId, entry };
    }
    return undefined;
  }

  /** The entries for routing a call; none (and the reason logged) when they cannot be opened. */
  private openForCall(accountId: string, sealed: string): PinlessEntry[] {
    const entries = this.openEntries(sealed);
    if (entries) return entries;
    this.log.error(
      { accountId },
      'pinless dial-in entries cannot be opened with this server’s secret key (SWITCHBOARD_SECRET_KEY): the call is not routed to them',
    );
    return [];
  }

  private async verify(entry: PinlessEntry): Promise<void> {
    const body = JSON.stringify({ To: entry.phone_number ?? entry.sip_uri, test: true });
    const timestamp = String(Math.floor(Date.now() / 1000));
    try {
      const result = await postJson(
        entry.room_creation_api,
        body,
        {
          'x-pinless-timestamp': timestamp,
          'x-pinless-signature': pinlessSignature(entry.hmac, timestamp, body),
        },
        { policy: this.policy, timeoutMs: VERIFY_TIMEOUT_MS },
      );
      this.log.info({ url: entry.room_creation_api, status: result.status }, 'pinless dial-in verification sent');
    } catch (err) {
      // Kept whatever happens: a receiver that does not know the test body must not lose its config.
      this.log.warn(
        { url: entry.room_creation_api, error: err instanceof Error ? err.message : String(err) },
        'pinless dial-in verification failed',
      );
    }
  }

  /** Undefined when the entries were sealed with a secret key this server does not hold. */
  private openEntries(sealed: string): PinlessEntry[] | undefined {
    try {
      return JSON.parse(this.secrets.open(sealed)) as PinlessEntry[];
    } catch (err) {
      if (err instanceof SealedSecretError) return undefined;
      throw err;
    }
  }

  private view(account: Account, entries: PinlessEntry[]): DomainView {
    return { domain_name: account.name, domain_id: account.domainId, config: { pinless_dialin: entries } };
  }
}

/**
 * An entry's SIP user: derived from what identifies the entry (its number, or its webhook and
 * prefix), not its position, so it stays the same when other entries are added or removed.
 */
function sipUser(
  domainId: string,
  entry: { phone_number?: string; room_creation_api: string; name_prefix?: string },
): string {
  const identity = entry.phone_number ?? `${entry.room_creation_api}|${entry.name_prefix ?? ''}`;
  return `dialin-${createHash('sha256').update(`${domainId}|${identity}`).digest('hex').slice(0, 16)}`;
}

/** `sip:user@host;params` → `user` (lower-cased); undefined for anything that is not a SIP URI. */
function sipUserOf(address: string): string | undefined {
  const match = /^sips?:([^@;]+)@/i.exec(address.trim());
  return match ? decodeURIComponent(match[1]!).toLowerCase() : undefined;
}

import { randomUUID } from 'node:crypto';
import { websocketBase } from '../config/env.js';
import { ApiError } from '../shared/api-error.js';
import { maskSecret, type SecretBox, SealedSecretError } from '../security/secret-box.js';
import type { Account } from '../store/accounts-repo.js';
import type { BotConfigRow, BotConfigsRepo } from '../store/bot-configs-repo.js';
import { type PageQuery, pageDirection } from '../store/paging.js';
import type { TelephonyConfigBody } from './bot-config-schema.js';
import { type StoredBody, sealSecrets, splitSecrets, storedBodyOf } from './config-secrets.js';
import { generateWebhookSecret } from './webhook-secret.js';

/** A configuration as the API returns it (the spec's "stored configuration"). */
export interface BotConfigView {
  id: string;
  wssUrl: string;
  domain: string;
  twiml: string;
  botConfig: Omit<TelephonyConfigBody, 'api_keys'> & { api_keys: Record<string, string> };
}

/** A configuration as a call needs it: provider keys in the clear. Never sent over the API. */
export interface BotConfigForCall {
  id: string;
  accountId: string;
  body: TelephonyConfigBody;
}

/**
 * Writes the carrier markup that connects a call to a media stream. The markup is the carrier's
 * (telephony/ builds it); configurations sit below telephony, so the composition root passes it in.
 */
export type StreamTwimlBuilder = (options: { streamUrl: string; parameters: Record<string, string> }) => string;

/** The media websocket path of a configuration; the route in telephony/ serves the same pattern. */
export function mediaStreamPath(configId: string): string {
  return `/ws/twilio/${configId}`;
}

/** Parameter names the TwiML passes to the media stream (start.customParameters). */
export const STREAM_PARAM_CONFIG_ID = 'botConfigId';
export const STREAM_PARAM_DOMAIN = 'domain';

export class BotConfigService {
  constructor(
    private readonly repo: BotConfigsRepo,
    private readonly secrets: SecretBox,
    private readonly publicUrl: string,
    private readonly buildStreamTwiml: StreamTwimlBuilder,
  ) {}

  async create(account: Account, body: TelephonyConfigBody): Promise<BotConfigView> {
    const { api_keys, ...rest } = body;
    const row = await this.repo.insert({
      id: randomUUID(),
      accountId: account.id,
      ...this.rowBody(rest, undefined),
      apiKeysSealed: this.seal(api_keys),
    });
    return this.view(account, row);
  }

  /**
   * Replaces the whole configuration. A key sent back exactly as it was masked on read keeps the
   * stored key, so a read-modify-write round trip does not wipe credentials.
   */
  async replace(account: Account, id: string, body: TelephonyConfigBody): Promise<BotConfigView> {
    const existing = await this.repo.get(account.id, id);
    if (!existing) throw notFound(id);
    // Keys this node cannot open are replaced by a body that sends every key in full; a masked
    // key would mean "keep the stored one", which cannot be read.
    const sendsMasked = Object.values(body.api_keys).some((value) => value.startsWith('****'));
    const storedKeys = sendsMasked ? this.openKeys(existing) : (this.openKeysIfReadable(existing) ?? {});
    const keys: Record<string, string> = {};
    for (const [vendor, value] of Object.entries(body.api_keys)) {
      const stored = storedKeys[vendor];
      keys[vendor] = stored !== undefined && value === maskSecret(stored) ? stored : value;
    }
    const { api_keys: _ignored, ...rest } = body;
    const stored = this.storedBody(existing).webhook_secret;
    const row = await this.repo.replace(account.id, id, {
      ...this.rowBody(rest, stored),
      apiKeysSealed: this.seal(keys),
    });
    if (!row) throw notFound(id);
    return this.view(account, row);
  }

  async get(account: Account, id: string): Promise<BotConfigView> {
    const row = await this.repo.get(account.id, id);
    if (!row) throw notFound(id);
    return this.view(account, row);
  }

  async list(account: Account, page: PageQuery): Promise<BotConfigView[]> {
    const direction = await pageDirection(page, (id) => this.repo.seqOf(account.id, id), 'configuration');
    const rows = await this.repo.list(account.id, direction, page.limit);
    const unreadable = rows.filter((row) => this.openKeysIfReadable(row) === undefined).map((row) => row.id);
    if (unreadable.length > 0) throw unreadableKeys(unreadable);
    return rows.map((row) => this.view(account, row));
  }

  async delete(account: Account, id: string): Promise<void> {
    if (!(await this.repo.delete(account.id, id))) throw notFound(id);
  }

  /** For the carrier-facing paths, which have no API key: the id itself is the capability. */
  async loadForCall(id: string): Promise<BotConfigForCall | undefined> {
    const row = await this.repo.getForCall(id);
    if (!row) return undefined;
    const body = { ...this.storedBody(row), api_keys: this.openKeys(row) };
    return { id: row.id, accountId: row.accountId, body };
  }

  wssUrl(id: string): string {
    return websocketBase(this.publicUrl) + mediaStreamPath(id);
  }

  /** TwiML for a configuration; `extra` adds call details (From, To) when a webhook serves it. */
  twiml(id: string, domain: string, extra: Record<string, string> = {}): string {
    return this.buildStreamTwiml({
      streamUrl: this.wssUrl(id),
      parameters: { [STREAM_PARAM_CONFIG_ID]: id, [STREAM_PARAM_DOMAIN]: domain, ...extra },
    });
  }

  private view(account: Account, row: BotConfigRow): BotConfigView {
    // The owner reads the signing secret in full: their receivers need it to check requests.
    const body = this.storedBody(row);
    const masked: Record<string, string> = {};
    for (const [vendor, key] of Object.entries(this.openKeys(row))) masked[vendor] = maskSecret(key);
    return {
      id: row.id,
      wssUrl: this.wssUrl(row.id),
      domain: account.domainId,
      twiml: this.twiml(row.id, account.domainId),
      botConfig: { ...body, api_keys: masked },
    };
  }

  /**
   * The body as stored: its signing secrets (`webhook_secret`, `status_callback.hmac`) sealed in a
   * column of their own. A configuration with webhook tools always has a webhook secret: the one
   * sent, else the one it had (a replace that leaves it out keeps it, so receivers keep working),
   * else a new one.
   */
  private rowBody(
    body: StoredBody,
    previousSecret: string | undefined,
  ): { bodyJson: string; secretsSealed: string | null } {
    const hasTools = Object.keys(body.webhook_tools ?? {}).length > 0;
    const secret = body.webhook_secret ?? previousSecret ?? (hasTools ? generateWebhookSecret() : undefined);
    const { rest, secrets } = splitSecrets({ ...body, ...(secret ? { webhook_secret: secret } : {}) });
    return { bodyJson: JSON.stringify(rest), secretsSealed: sealSecrets(this.secrets, secrets) };
  }

  private storedBody(row: BotConfigRow): StoredBody {
    return storedBodyOf(this.secrets, row);
  }

  private seal(keys: Record<string, string>): string | null {
    return Object.keys(keys).length === 0 ? null : this.secrets.seal(JSON.stringify(keys));
  }

  /** The configuration's provider keys; an ApiError naming it when they cannot be opened. */
  private openKeys(row: BotConfigRow): Record<string, string> {
    const keys = this.openKeysIfReadable(row);
    if (keys === undefined) throw unreadableKeys([row.id]);
    return keys;
  }

  /** Undefined when the keys were sealed with a secret key this server does not hold. */
  private openKeysIfReadable(row: BotConfigRow): Record<string, string> | undefined {
    if (!row.apiKeysSealed) return {};
    try {
      return JSON.parse(this.secrets.open(row.apiKeysSealed)) as Record<string, string>;
    } catch (err) {
      if (err instanceof SealedSecretError) return undefined;
      throw err;
    }
  }
}

function notFound(id: string): ApiError {
  return new ApiError('not-found', `no configuration with id ${id}`);
}

/**
 * Provider keys sealed with a secret key this server does not hold (rotated away, or this node
 * was given another SWITCHBOARD_SECRET_KEY): a server error, since the caller did nothing wrong,
 * that names the configuration and the field, and says how to recover.
 */
function unreadableKeys(ids: readonly string[]): ApiError {
  const which = ids.length === 1 ? `configuration ${ids[0]}` : `configurations ${ids.join(', ')}`;
  return new ApiError(
    'server-error',
    `${which}: botConfig.api_keys cannot be opened: they were sealed with a secret key this server does not hold (SWITCHBOARD_SECRET_KEY); ` +
      'the operator must give this node the store’s key, or you can send the configuration again with every api_keys value in full (POST /v1/bots/twilio-config/{id})',
  );
}

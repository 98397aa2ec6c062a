import type { ReadableStreamReadResult } from 'node:stream/web';
import type { EndpointGuard } from './endpoint.js';
import { endpointFetch } from './endpoint-fetch.js';
import { ProviderError } from './types.js';
import { MAX_ERROR_BODY_BYTES, networkErrorText, redact } from './vendor-errors.js';
import { isAddressRefusal } from '../security/address-policy.js';

export interface TimedPostRequest {
  /** Registry name, the prefix of every error message. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: string;
  /** Silence allowed before the headers, before the first bytes and between chunks. */
  timeoutMs: number;
  /** Values that must never appear in an error message (the key, in case something echoes it). */
  secrets: string[];
  /** Set for a bot's own base_url: the connection checks the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * One streamed POST to a vendor (an LLM's events, a TTS's audio) whose every wait on the network is
 * bounded by `timeoutMs` of silence; the clock runs only while waiting, not while the caller holds
 * a chunk. Aborting `signal` (barge-in, hang-up) makes each step answer undefined, quietly.
 * Timeouts and network failures throw a retryable ProviderError (a refused address excepted).
 * `close()` ends the request; leaving early must call it.
 */
export class TimedFetch {
  private readonly local = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOut = false;
  private reader: ReadableStreamDefaultReader<Uint8Array> | undefined;

  constructor(
    private readonly request: TimedPostRequest,
    private readonly signal: AbortSignal,
  ) {}

  /** The response (its head); undefined once `signal` aborted. */
  async response(): Promise<Response | undefined> {
    const { provider, timeoutMs } = this.request;
    if (this.signal.aborted) return undefined;
    this.arm();
    try {
      const { url, headers, body, guard } = this.request;
      return await endpointFetch(
        url,
        { method: 'POST', headers, body, signal: AbortSignal.any([this.signal, this.local.signal]) },
        guard,
      );
    } catch (err) {
      // An interrupted request needs no error, even if its timer fired in the same moment.
      if (this.signal.aborted) return undefined;
      if (this.timedOut) throw new ProviderError(provider, `no response within ${timeoutMs} ms`, true);
      throw new ProviderError(
        provider,
        `request failed: ${redact(networkErrorText(err), this.request.secrets)}`,
        !isAddressRefusal(err),
        { cause: err },
      );
    }
  }

  /** An error response's body (its first MAX_ERROR_BODY_BYTES), '' if it breaks off; undefined once `signal` aborted. */
  async errorBody(response: Response): Promise<string | undefined> {
    this.arm();
    try {
      return (await response.text()).slice(0, MAX_ERROR_BODY_BYTES);
    } catch {
      if (this.signal.aborted) return undefined;
      if (this.timedOut)
        throw new ProviderError(
          this.request.provider,
          `HTTP ${response.status}, and its body did not arrive within ${this.request.timeoutMs} ms`,
          true,
        );
      return '';
    } finally {
      clearTimeout(this.timer);
    }
  }

  /**
   * The body's next chunk; undefined once `signal` aborted. `silence` words a timeout, e.g.
   * `no audio` before the first bytes and `audio stalled` after.
   */
  async read(response: Response, silence: () => string): Promise<ReadableStreamReadResult<Uint8Array> | undefined> {
    const { provider, timeoutMs } = this.request;
    if (!response.body) throw new ProviderError(provider, 'the response has no body', true);
    this.reader ??= response.body.getReader();
    this.arm();
    try {
      return await this.reader.read();
    } catch (err) {
      if (this.signal.aborted) return undefined;
      if (this.timedOut) throw new ProviderError(provider, `${silence()} ${timeoutMs} ms`, true);
      throw new ProviderError(
        provider,
        `stream interrupted: ${redact(networkErrorText(err), this.request.secrets)}`,
        true,
        { cause: err },
      );
    } finally {
      clearTimeout(this.timer);
    }
  }

  /** Ends the request: closes the connection when the body was not read to its end, a no-op after. */
  close(): void {
    clearTimeout(this.timer);
    this.local.abort();
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.local.abort();
    }, this.request.timeoutMs);
  }
}

import type { Logger } from 'pino';
import type { EndpointGuard } from '../../endpoint.js';
import { TimedFetch } from '../../timed-fetch.js';
import { type ProviderContext, ProviderError, type TtsOutput, type TtsProvider } from '../../types.js';
import type { AudioFormat } from '../../../audio/audio-format.js';
import { isRetryableStatus, redact, vendorErrorText } from '../../vendor-errors.js';
import { OutputQueue } from '../output-queue.js';
import type { SpeechRequest } from './openai-tts-messages.js';

const PROVIDER = 'openai_tts';

/** What `response_format: "pcm"` returns: raw 24 kHz 16-bit little-endian mono; the pipeline resamples. */
export const OPENAI_PCM_FORMAT: AudioFormat = { encoding: 'linear16', sampleRateHz: 24000 };
/** Requests running at once: the piece playing and the next ones, fetched ahead so they start without a gap. */
const MAX_IN_FLIGHT = 3;

export interface OpenAiTtsConfig {
  /** The full speech URL: `https://api.openai.com/v1/audio/speech` or an override. */
  url: string;
  apiKey: string;
  model: string;
  voice: string;
  speed?: number;
  /** Vendor fields merged into every body (service_options, e.g. `instructions`). */
  extraBody: Record<string, unknown>;
  /** Silence allowed per request: before the response headers, before the first bytes and between chunks. */
  timeoutMs: number;
  /** Set for a bot's own base_url: connections check the addresses its host resolves to. */
  guard?: EndpointGuard;
}

/**
 * OpenAI text-to-speech over REST, `POST /v1/audio/speech` with `{model, input, voice,
 * response_format: "pcm"}` and Bearer auth, as OpenAI's public API reference describes it: the
 * body is raw 24 kHz 16-bit little-endian mono PCM, streamed as it is generated.
 *
 * One request per piece (pieces arrive sentence by sentence). The next pieces' requests start
 * while the current one streams, up to MAX_IN_FLIGHT at once, but audio is yielded strictly in
 * order, each piece's audio followed by its text as spoken. Aborting ctx.signal cancels every
 * request at once (closing the connection is how OpenAI is cancelled) and ends quietly.
 */
export class OpenAiTts implements TtsProvider {
  readonly name = PROVIDER;
  readonly outputFormat = OPENAI_PCM_FORMAT;

  constructor(readonly config: OpenAiTtsConfig) {}

  async *synthesize(text: AsyncIterable<string>, ctx: ProviderContext): AsyncIterable<TtsOutput> {
    if (ctx.signal.aborted) return;
    // Ends every request of this reply when it stops early (abort, failure, consumer gone).
    const reply = new AbortController();
    const signal = AbortSignal.any([ctx.signal, reply.signal]);
    // Requests not played yet, in order; the first is playing (or next to).
    const unplayed: PieceRequest[] = [];
    const arrivals = new OutputQueue<PieceRequest>();
    const startAhead = () => {
      for (let i = 0; i < unplayed.length && i < MAX_IN_FLIGHT; i++) unplayed[i]!.start();
    };

    const source = text[Symbol.asyncIterator]();
    const pull = async () => {
      try {
        for (;;) {
          const next = await source.next();
          if (next.done || signal.aborted) break;
          if (next.value.trim().length === 0) continue;
          const request = new PieceRequest(next.value, this.config, signal, ctx.log);
          unplayed.push(request);
          arrivals.push(request);
          startAhead();
        }
        arrivals.end();
      } catch (err) {
        // A failing text source (the LLM) ends the reply at once with its own error, unwrapped.
        arrivals.fail(err);
        for (const request of unplayed) request.abandon(err);
      }
    };
    void pull();

    try {
      for await (const request of arrivals.drain()) {
        request.start();
        for await (const audio of request.audio()) {
          if (signal.aborted) return;
          yield { type: 'audio', audio };
        }
        if (signal.aborted) return;
        yield { type: 'spoken', text: request.text };
        unplayed.shift();
        startAhead();
      }
    } catch (err) {
      if (ctx.signal.aborted) return;
      throw err;
    } finally {
      reply.abort();
      source.return?.().catch(() => undefined);
    }
  }
}

/** One piece's request: started once, its audio buffered until the reply reaches it. */
class PieceRequest {
  private readonly chunks = new OutputQueue<Uint8Array>();
  private started = false;

  constructor(
    readonly text: string,
    private readonly config: OpenAiTtsConfig,
    private readonly signal: AbortSignal,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    void this.fetch();
  }

  /** Ends the piece with this error (once what is buffered was taken), whatever the request does. */
  abandon(error: unknown): void {
    this.chunks.fail(error);
  }

  /** The piece's PCM as it arrives, in even-length chunks; throws the request's ProviderError. */
  audio(): AsyncGenerator<Uint8Array> {
    return this.chunks.drain();
  }

  private async fetch(): Promise<void> {
    const config = this.config;
    const post = new TimedFetch(
      {
        provider: PROVIDER,
        url: config.url,
        guard: config.guard,
        headers: { authorization: `Bearer ${config.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(this.body()),
        timeoutMs: config.timeoutMs,
        secrets: [config.apiKey],
      },
      this.signal,
    );
    const startedMs = performance.now();
    let bytes = 0;
    try {
      const response = await post.response();
      if (!response) return this.chunks.end();
      this.log.debug(
        { provider: PROVIDER, status: response.status, headersMs: Math.round(performance.now() - startedMs) },
        'tts response started',
      );

      if (!response.ok) {
        const body = await post.errorBody(response);
        if (body === undefined) return this.chunks.end();
        const text = redact(vendorErrorText(body), config.apiKey) || response.statusText;
        throw new ProviderError(PROVIDER, `HTTP ${response.status}: ${text}`, isRetryableStatus(response.status));
      }

      // A 16-bit sample split across network chunks waits for its second byte.
      let oddByte: number | undefined;
      for (;;) {
        const chunk = await post.read(response, () => (bytes === 0 ? 'no audio within' : 'audio stalled for'));
        if (!chunk) return this.chunks.end();
        if (chunk.done) break;
        let data: Uint8Array = chunk.value;
        if (oddByte !== undefined) {
          const joined = new Uint8Array(data.length + 1);
          joined[0] = oddByte;
          joined.set(data, 1);
          data = joined;
          oddByte = undefined;
        }
        if (data.length % 2 === 1) {
          oddByte = data[data.length - 1];
          data = data.subarray(0, data.length - 1);
        }
        if (data.length > 0) {
          bytes += data.length;
          this.chunks.push(data);
        }
      }
      this.chunks.end();
    } catch (err) {
      this.chunks.fail(err);
    } finally {
      post.close();
      this.log.debug(
        { provider: PROVIDER, bytes, elapsedMs: Math.round(performance.now() - startedMs) },
        'tts request closed',
      );
    }
  }

  private body(): Record<string, unknown> {
    const config = this.config;
    const body: Record<string, unknown> = { model: config.model, voice: config.voice };
    if (config.speed !== undefined) body.speed = config.speed;
    // Vendor extras may override the options above, never what makes this raw streamed PCM.
    Object.assign(body, config.extraBody);
    delete body.stream_format;
    const fixed = { input: this.text, response_format: 'pcm' } satisfies Partial<SpeechRequest>;
    return Object.assign(body, fixed);
  }
}

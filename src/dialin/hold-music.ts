import type { Logger } from 'pino';
import { TELEPHONY_SAMPLE_RATE_HZ } from '../audio/frames.js';
import { wavToMulaw } from '../audio/wav.js';
import type { AddressPolicy } from '../security/address-policy.js';
import { getBytes } from '../security/webhook-client.js';

/** A WAV of a few minutes at CD quality fits; anything bigger is not hold music. */
const MAX_DOWNLOAD_BYTES = 32 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 10_000;
/**
 * Hold music loops, so a long file is cut to a minute (480 KB of 8 kHz mu-law): each caller on
 * hold queues a copy of the loop, which keeps many callers on hold cheap.
 */
const MAX_AUDIO_BYTES = 60 * TELEPHONY_SAMPLE_RATE_HZ;
/** A file is fetched again after this long, so a customer's new music is picked up. */
const REFRESH_MS = 10 * 60_000;
/** A URL that failed is not tried again for this long (the chime plays meanwhile). */
const RETRY_AFTER_FAILURE_MS = 60_000;
/** Distinct URLs kept (about 30 MB at most); the least recently used one goes first. */
const MAX_CACHED_URLS = 64;

interface CachedMusic {
  audio: Uint8Array | undefined;
  fetchedAtMs: number;
  loading: boolean;
}

/**
 * The `hold_music_url` of pinless dial-in entries, fetched once and decoded to 8 kHz mu-law for
 * the hold loop. WAV files (any rate, mono or stereo) and raw mu-law (`audio/basic`, `.ulaw`)
 * are understood; anything else is logged and the generated chime plays instead, as it does
 * while the file is loading. The download goes through the webhook address checks.
 */
export class HoldMusic {
  private readonly cache = new Map<string, CachedMusic>();

  constructor(
    private readonly policy: AddressPolicy,
    private readonly log: Logger,
  ) {}

  /** The decoded music when it is ready; otherwise starts (or refreshes) the download and returns what is cached. */
  get(url: string): Uint8Array | undefined {
    const now = Date.now();
    let entry = this.cache.get(url);
    if (entry) {
      // Re-inserting keeps the map in least-recently-used order.
      this.cache.delete(url);
    } else {
      entry = { audio: undefined, fetchedAtMs: 0, loading: false };
      if (this.cache.size >= MAX_CACHED_URLS) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(url, entry);
    const staleAfterMs = entry.audio ? REFRESH_MS : RETRY_AFTER_FAILURE_MS;
    if (!entry.loading && now - entry.fetchedAtMs >= staleAfterMs) this.load(url, entry);
    return entry.audio;
  }

  private load(url: string, entry: CachedMusic): void {
    entry.loading = true;
    getBytes(url, { policy: this.policy, timeoutMs: DOWNLOAD_TIMEOUT_MS, maxBytes: MAX_DOWNLOAD_BYTES })
      .then(({ status, contentType, body }) => {
        if (status !== 200) throw new Error(`HTTP ${status}`);
        const audio = decode(url, contentType, body);
        if (audio.length < TELEPHONY_SAMPLE_RATE_HZ) throw new Error('shorter than a second');
        entry.audio = audio.subarray(0, MAX_AUDIO_BYTES);
        this.log.info({ url, durationMs: Math.round(entry.audio.length / 8) }, 'hold music loaded');
      })
      .catch((err: unknown) => {
        // Keep the last good copy, if any; callers hear the chime otherwise.
        this.log.warn(
          { url, err: err instanceof Error ? err.message : String(err) },
          'hold music could not be used; playing the chime',
        );
      })
      .finally(() => {
        entry.loading = false;
        entry.fetchedAtMs = Date.now();
      });
  }
}

function decode(url: string, contentType: string | undefined, body: Buffer): Uint8Array {
  const bytes = new Uint8Array(body.buffer, body.byteOffset, body.length);
  if (bytes.length >= 12 && body.toString('latin1', 0, 4) === 'RIFF' && body.toString('latin1', 8, 12) === 'WAVE')
    return wavToMulaw(bytes);
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (
    type === 'audio/basic' ||
    type === 'audio/x-mulaw' ||
    type === 'audio/pcmu' ||
    /\.(ulaw|mulaw|ul)$/i.test(new URL(url).pathname)
  )
    return bytes;
  throw new Error(
    `not a WAV or raw 8 kHz mu-law file (content-type ${type || 'none'}); convert it, e.g. sox in.mp3 -r 8000 -c 1 out.wav`,
  );
}

import type { Logger } from 'pino';
import { toTelephony } from '../audio/format-converter.js';
import type { TtsProvider } from '../providers/types.js';
import type { Playout } from './playout.js';

/**
 * Speaks a fixed line (a goodbye, an apology, the no-bot message) as reply `generation` of
 * `playout`, and ends that reply, so Playout reports it played like any other.
 */
export async function speakFixedPhrase(
  playout: Playout,
  generation: number,
  tts: TtsProvider,
  text: string,
  signal: AbortSignal,
  log: Logger,
): Promise<void> {
  const converter = toTelephony(tts.outputFormat);
  async function* pieces(): AsyncGenerator<string> {
    yield text;
  }
  for await (const out of tts.synthesize(pieces(), { signal, log })) {
    if (out.type === 'audio') playout.enqueue(generation, converter.convert(out.audio));
  }
  playout.enqueue(generation, converter.flush());
  playout.endReply(generation);
}

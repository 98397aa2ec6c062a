import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { CartesiaEmulator } from '../../src/tools/emulators/cartesia-emulator.js';
import { API_KEY, type Vendors, startVendors } from './vendors.js';

/**
 * Cartesia's own SDK (`@cartesia/cartesia-js`) against the Cartesia emulator: websocket TTS with
 * a context, streamed transcript pieces, word timestamps and audio chunks.
 *
 * Two things keep the SDK from reaching a local plain-text server unaided:
 * - Its ESM build looks for `ws` with `require('ws')`, which does not exist in an ES module, and
 *   then falls back to the global WebSocket, which Node 20 lacks; so the test loads the SDK's
 *   CommonJS build, where the `require` works.
 * - It forces `wss:` onto the base URL (resources/tts/internal-base, buildURL), so the test hands
 *   its `ws` options a `createConnection` that opens plain TCP to the emulator; the URL, headers,
 *   handshake and messages are the SDK's own.
 */
const { default: Cartesia } = createRequire(import.meta.url)(
  '@cartesia/cartesia-js',
) as typeof import('@cartesia/cartesia-js');

let vendors: Vendors | undefined;
afterEach(async () => {
  await vendors?.close();
  vendors = undefined;
});

describe('@cartesia/cartesia-js against the Cartesia emulator', () => {
  it('a context: pushed transcript pieces come back as word timestamps, pcm audio chunks and done', async () => {
    vendors = await startVendors();
    const v = vendors;
    const client = new Cartesia({ apiKey: API_KEY, baseURL: v.baseUrl, maxRetries: 0 });
    const ws = await client.tts.websocket({ createConnection: () => v.plainSocket() });
    const context = ws.context({
      model_id: 'sonic-2',
      voice: { mode: 'id', id: 'a0e99841-438c-4a64-b679-ae501e7d6091' },
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 16000 },
      add_timestamps: true,
    });
    const pieces = ['Hello there. ', 'How are you?'];
    for (const transcript of pieces) await context.push({ transcript });
    await context.no_more_inputs();

    let audioBytes = 0;
    const words: string[] = [];
    const types: string[] = [];
    for await (const event of context.receive()) {
      types.push(event.type);
      expect(event.context_id).toBe(context.contextId);
      if (event.type === 'chunk') {
        expect(event.audio).toBeInstanceOf(Uint8Array);
        audioBytes += event.audio!.length;
      }
      if (event.type === 'timestamps') words.push(...(event.word_timestamps?.words ?? []));
    }
    ws.close();

    expect(types.at(-1)).toBe('done');
    expect(types).toContain('chunk');
    expect(words).toEqual(['Hello', 'there.', 'How', 'are', 'you?']);
    // 60 ms of emulated speech per character of each piece (outer whitespace excluded), 16 kHz, 2 bytes a sample.
    const chars = pieces.reduce((n, piece) => n + piece.trim().length, 0);
    expect(audioBytes).toBe(chars * 60 * 16 * 2);

    const emulator = vendors.emulator(CartesiaEmulator);
    const recorded = emulator.contexts.at(-1)!;
    expect(recorded.contextId).toBe(context.contextId);
    expect(recorded.transcripts).toEqual(pieces);
    expect(recorded.inputEnded).toBe(true);
    expect(recorded.done).toBe(true);
    expect(emulator.connections.at(-1)!.version).toBeDefined();
  });
});

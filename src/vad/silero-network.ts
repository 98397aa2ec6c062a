/**
 * The Silero VAD v6 network in TypeScript: the same weights as the ONNX model the package ships
 * (read from it at load, onnx-constants.ts), the same arithmetic, no runtime. The model is small
 * (a short-time Fourier transform as a convolution, four 1-D convolutions, one LSTM cell, a 1x1
 * convolution: about 350k multiply-adds per 32 ms window at 8 kHz, nearly all of them in five
 * matrix-vector products, which small WebAssembly SIMD kernels do: simd-kernels.ts). The first of
 * the five, the STFT's (66k multiply-adds at 8 kHz, 264k at 16 kHz), is a Hann-windowed DFT in
 * Silero v6: checked at load, it runs as an FFT of its four frames at once (windowed-fft.ts), and
 * a model whose STFT is anything else keeps the product. Run in the event loop, the network costs
 * about what handing windows to onnxruntime in a worker thread cost, and the process no longer
 * holds onnxruntime's native library, its session and a second V8 isolate (about 46 MB less,
 * docs/cost-per-call.md). silero-network.test.ts checks its outputs, states and the VAD's
 * decisions against onnxruntime's on the fixtures and the held-apart clips.
 *
 * The graph, per stream (8 kHz; 16 kHz doubles the STFT's sizes):
 *   x = [context 32 | window 256], reflect-padded on the right by 32 samples (352 → 4 frames)
 *   STFT: conv(130 filters of 128 taps, stride 64), magnitude of the 65 real/imaginary pairs
 *         (an FFT of 128 points per frame when the filters are a windowed DFT)
 *   encoder: conv 65→128 (k3, p1, s1), conv 128→64 (s2), conv 64→64 (s2), conv 64→128 (s1),
 *            each with a ReLU; 4 frames → 2 → 1
 *   LSTM cell (128, PyTorch gate order i, f, g, o) on the state [h; c]
 *   output: sigmoid(conv1x1(ReLU(h))), the mean over the single frame
 */

import { readFileSync } from 'node:fs';
import { readOnnxFloatTensors, type OnnxFloatTensor } from './onnx-constants.js';
import { SileroBatcher, type SileroBatchResult, type SileroBatchRunner } from './silero-batcher.js';
import { SILERO_GEOMETRY, SILERO_STATE_SIZE, type SileroSampleRateHz, sileroModelPath } from './silero-model.js';
import { createSimdKernels, type SimdKernels } from './simd-kernels.js';
import { dftWindow, FFT_FRAMES, FourFrameFft } from './windowed-fft.js';

const HIDDEN = 128;
const GATES = 4 * HIDDEN;
const KERNEL = 3;

interface ConvLayer {
  /** [out][in][KERNEL], as stored in the model. */
  weight: Float32Array;
  bias: Float32Array;
  inChannels: number;
  outChannels: number;
  stride: number;
}

export interface RateWeights {
  /** [2 * bins][taps]: the real then the imaginary filters. */
  basis: Float32Array;
  taps: number;
  bins: number;
  encoder: ConvLayer[];
  /** [GATES][2 * HIDDEN]: each gate row's input weights followed by its recurrent weights. */
  lstmWeight: Float32Array;
  /** Input bias plus recurrent bias, [GATES]. */
  lstmBias: Float32Array;
  outWeight: Float32Array;
  outBias: number;
}

function tensor(tensors: Map<string, OnnxFloatTensor>, prefix: string, name: string): OnnxFloatTensor {
  const found = tensors.get(prefix + name);
  if (!found) throw new Error(`Silero model: no tensor ${name}`);
  return found;
}

function weightsFor(tensors: Map<string, OnnxFloatTensor>, basisName: string): RateWeights {
  const prefix = basisName.slice(0, basisName.length - 'stft.forward_basis_buffer'.length);
  const basis = tensor(tensors, prefix, 'stft.forward_basis_buffer');
  const taps = basis.dims[2]!;
  const bins = basis.dims[0]! / 2;
  const encoder = [0, 1, 2, 3].map((layer): ConvLayer => {
    const weight = tensor(tensors, prefix, `encoder.${layer}.reparam_conv.weight`);
    return {
      weight: weight.data,
      bias: tensor(tensors, prefix, `encoder.${layer}.reparam_conv.bias`).data,
      outChannels: weight.dims[0]!,
      inChannels: weight.dims[1]!,
      stride: layer === 1 || layer === 2 ? 2 : 1,
    };
  });
  const weightIh = tensor(tensors, prefix, 'decoder.rnn.weight_ih').data;
  const weightHh = tensor(tensors, prefix, 'decoder.rnn.weight_hh').data;
  const biasIh = tensor(tensors, prefix, 'decoder.rnn.bias_ih').data;
  const biasHh = tensor(tensors, prefix, 'decoder.rnn.bias_hh').data;
  const lstmWeight = new Float32Array(GATES * 2 * HIDDEN);
  const lstmBias = new Float32Array(GATES);
  for (let row = 0; row < GATES; row++) {
    lstmWeight.set(weightIh.subarray(row * HIDDEN, (row + 1) * HIDDEN), row * 2 * HIDDEN);
    lstmWeight.set(weightHh.subarray(row * HIDDEN, (row + 1) * HIDDEN), row * 2 * HIDDEN + HIDDEN);
    lstmBias[row] = biasIh[row]! + biasHh[row]!;
  }
  return {
    basis: basis.data,
    taps,
    bins,
    encoder,
    lstmWeight,
    lstmBias,
    outWeight: tensor(tensors, prefix, 'decoder.decoder.2.weight').data,
    outBias: tensor(tensors, prefix, 'decoder.decoder.2.bias').data[0]!,
  };
}

/**
 * The weights of one rate, read from the model file each time: a network is built once per rate
 * per process, and keeps its own copy in its module's memory, so nothing here is held.
 */
export function rateWeights(sampleRateHz: SileroSampleRateHz): RateWeights {
  const tensors = readOnnxFloatTensors(readFileSync(sileroModelPath()));
  const { contextSamples } = SILERO_GEOMETRY[sampleRateHz];
  // The STFT's filter is four contexts long at either rate (128 taps for 32 samples of context at 8 kHz).
  const taps = contextSamples * 4;
  for (const [name, found] of tensors) {
    if (name.endsWith('stft.forward_basis_buffer') && found.dims[2] === taps) return weightsFor(tensors, name);
  }
  throw new Error(`Silero model has no ${sampleRateHz} Hz branch`);
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** tanh through one exp (V8's Math.tanh costs several times more); saturates instead of dividing ∞ by ∞. */
function tanh(x: number): number {
  if (x > 20) return 1;
  if (x < -20) return -1;
  const e = Math.exp(2 * x);
  return (e - 1) / (e + 1);
}

const ceil4 = (n: number) => Math.ceil(n / 4) * 4;

/** Bump allocator over the gemv module's memory: byte offsets, 16-byte aligned. */
class Layout {
  bytes = 0;
  take(floats: number): number {
    const at = this.bytes;
    this.bytes += ceil4(floats) * 4;
    return at;
  }
}

interface PlacedConv {
  layer: ConvLayer;
  /**
   * The kernel taps that ever meet an input frame: with one or two input frames, the padding
   * leaves some taps only zeros to multiply (the last layer uses only its middle tap).
   */
  taps: number[];
  /** Weights as [out][ceil4(in × taps)], zero-padded; byte offset. */
  weightAt: number;
  width: number;
  paddedWidth: number;
  inFrames: number;
  outFrames: number;
}

/**
 * One rate's network: its weights copied into the kernels' module memory (simd-kernels.ts), and its
 * scratch buffers there too, so nothing is allocated per window. Not for concurrent use: one
 * window runs at a time (the batcher runs them one after the other).
 */
export class SileroNetwork {
  readonly rowSamples: number;
  private readonly gemv: SimdKernels['gemv'];
  private readonly heap: Float32Array;
  private readonly padSamples: number;
  private readonly hop: number;
  private readonly frames: number;
  private readonly taps: number;
  private readonly bins: number;
  /**
   * How the STFT runs: an FFT when the model's basis is a windowed DFT (windowed-fft.ts checks it
   * at load), else the basis times each frame (`gemv`), for a model whose filters are something else.
   */
  readonly stftMethod: 'fft' | 'gemv';
  private readonly fft: FourFrameFft | undefined;
  /** Rows of the STFT's basis, padded to a multiple of 4. */
  private readonly basisRows: number;
  /** The basis and the gemv's output, or the FFT's tables and output: one or the other is -1. */
  private readonly basisAt: number;
  private readonly stftAt: number;
  private readonly fftAt: number;
  private readonly paddedAt: number;
  private readonly convs: PlacedConv[];
  private readonly columnAt: number;
  private readonly convOutAt: number;
  private readonly lstmWeightAt: number;
  private readonly lstmInputAt: number;
  private readonly gatesAt: number;
  private readonly lstmBias: Float32Array;
  private readonly outWeight: Float32Array;
  private readonly outBias: number;
  /** Activations, channel-major ([channel][frame]): the STFT's magnitudes, then each layer's output. */
  private readonly activations: Float32Array[];

  /** `weights` are the model file's unless given (a test gives altered ones). */
  constructor(sampleRateHz: SileroSampleRateHz, weights: RateWeights = rateWeights(sampleRateHz)) {
    const { windowSamples, contextSamples } = SILERO_GEOMETRY[sampleRateHz];
    this.rowSamples = windowSamples + contextSamples;
    this.padSamples = contextSamples;
    this.taps = weights.taps;
    this.bins = weights.bins;
    this.hop = weights.taps / 2;
    this.frames = (this.rowSamples + this.padSamples - weights.taps) / this.hop + 1;
    this.basisRows = ceil4(2 * weights.bins);
    const window = this.frames === FFT_FRAMES ? dftWindow(weights.basis, weights.bins, weights.taps) : undefined;
    this.stftMethod = window ? 'fft' : 'gemv';

    const layout = new Layout();
    this.basisAt = window ? -1 : layout.take(this.basisRows * this.taps);
    this.stftAt = window ? -1 : layout.take(this.basisRows);
    this.fftAt = window ? layout.take(FourFrameFft.bytes(this.taps) / 4) : -1;
    this.paddedAt = layout.take(this.rowSamples + this.padSamples);
    // The STFT's magnitudes go first, once the module's memory exists; then each layer's output.
    this.activations = [];
    let frames = this.frames;
    let widest = 0;
    let tallest = 0;
    this.convs = weights.encoder.map((layer) => {
      const inFrames = frames;
      frames = Math.floor((frames + 2 - KERNEL) / layer.stride) + 1;
      const outFrames = frames;
      const taps = [0, 1, 2].filter((k) =>
        Array.from({ length: outFrames }, (_, frame) => frame * layer.stride - 1 + k).some(
          (source) => source >= 0 && source < inFrames,
        ),
      );
      const width = layer.inChannels * taps.length;
      const paddedWidth = ceil4(width);
      if (layer.outChannels % 4 !== 0) throw new Error('Silero model: a convolution with channels not a multiple of 4');
      widest = Math.max(widest, paddedWidth);
      tallest = Math.max(tallest, layer.outChannels);
      this.activations.push(new Float32Array(layer.outChannels * frames));
      return {
        layer,
        taps,
        weightAt: layout.take(layer.outChannels * paddedWidth),
        width,
        paddedWidth,
        inFrames,
        outFrames,
      };
    });
    if (frames !== 1 || weights.encoder.at(-1)!.outChannels !== HIDDEN) {
      throw new Error('Silero model: the encoder does not end in one frame of 128 channels');
    }
    this.columnAt = layout.take(widest);
    this.convOutAt = layout.take(tallest);
    this.lstmWeightAt = layout.take(GATES * 2 * HIDDEN);
    this.lstmInputAt = layout.take(2 * HIDDEN);
    this.gatesAt = layout.take(GATES);

    const module = createSimdKernels(layout.bytes);
    this.gemv = module.gemv;
    this.heap = new Float32Array(module.memory.buffer);
    const heap = this.heap;
    if (window) {
      this.fft = new FourFrameFft(module, this.fftAt, window.window);
      // The FFT leaves its magnitudes [bin][frame], the layout the first convolution reads.
      this.activations.unshift(new Float32Array(module.memory.buffer, this.fft.outAt, this.bins * this.frames));
    } else {
      this.fft = undefined;
      heap.set(weights.basis, this.basisAt / 4);
      this.activations.unshift(new Float32Array(this.bins * this.frames));
    }
    for (const conv of this.convs) {
      const { weight, inChannels, outChannels } = conv.layer;
      for (let o = 0; o < outChannels; o++) {
        for (let channel = 0; channel < inChannels; channel++) {
          conv.taps.forEach((k, t) => {
            heap[conv.weightAt / 4 + o * conv.paddedWidth + channel * conv.taps.length + t] =
              weight[(o * inChannels + channel) * KERNEL + k]!;
          });
        }
      }
    }
    heap.set(weights.lstmWeight, this.lstmWeightAt / 4);
    this.lstmBias = weights.lstmBias;
    this.outWeight = weights.outWeight;
    this.outBias = weights.outBias;
  }

  /**
   * Runs one window: `input[at..at+rowSamples)` is the context followed by the window, scaled to
   * -1..1; the stream's state is `h` at `state[hAt..hAt+128)` and `c` at `state[cAt..cAt+128)`,
   * read, then overwritten with the next state. Returns the speech probability.
   */
  run(input: Float32Array, at: number, state: Float32Array, hAt: number, cAt: number): number {
    this.stft(input, at);
    for (let i = 0; i < this.convs.length; i++)
      this.conv(this.convs[i]!, this.activations[i]!, this.activations[i + 1]!);
    return this.decode(this.activations[this.convs.length]!, state, hAt, cAt);
  }

  private stft(input: Float32Array, at: number): void {
    const heap = this.heap;
    const padded = this.paddedAt / 4;
    const rowSamples = this.rowSamples;
    for (let i = 0; i < rowSamples; i++) heap[padded + i] = input[at + i]!;
    // Reflect padding on the right: the last sample is the mirror, not repeated.
    for (let j = 0; j < this.padSamples; j++) heap[padded + rowSamples + j] = input[at + rowSamples - 2 - j]!;
    if (this.fft) {
      // The magnitudes land where the first convolution reads them (activations[0] is a view).
      this.fft.run(padded, this.hop);
      return;
    }
    const frames = this.frames;
    const bins = this.bins;
    const out = this.activations[0]!;
    for (let frame = 0; frame < frames; frame++) {
      this.gemv(this.basisAt, this.paddedAt + frame * this.hop * 4, this.stftAt, this.basisRows, this.taps);
      const spectrum = this.stftAt / 4;
      for (let bin = 0; bin < bins; bin++) {
        const re = heap[spectrum + bin]!;
        const im = heap[spectrum + bins + bin]!;
        out[bin * frames + frame] = Math.fround(Math.sqrt(re * re + im * im));
      }
    }
  }

  /** conv1d (kernel 3, padding 1) + ReLU, channel-major in and out. */
  private conv(conv: PlacedConv, input: Float32Array, out: Float32Array): void {
    const { layer, taps, inFrames, outFrames, width, paddedWidth } = conv;
    const { bias, inChannels, outChannels, stride } = layer;
    const heap = this.heap;
    const column = this.columnAt / 4;
    const convOut = this.convOutAt / 4;
    const tapCount = taps.length;
    for (let frame = 0; frame < outFrames; frame++) {
      const first = frame * stride - 1;
      for (let channel = 0; channel < inChannels; channel++) {
        for (let t = 0; t < tapCount; t++) {
          const source = first + taps[t]!;
          heap[column + channel * tapCount + t] =
            source >= 0 && source < inFrames ? input[channel * inFrames + source]! : 0;
        }
      }
      for (let pad = width; pad < paddedWidth; pad++) heap[column + pad] = 0;
      this.gemv(conv.weightAt, this.columnAt, this.convOutAt, outChannels, paddedWidth);
      for (let o = 0; o < outChannels; o++) {
        const value = bias[o]! + heap[convOut + o]!;
        out[o * outFrames + frame] = value > 0 ? value : 0;
      }
    }
  }

  private decode(encoded: Float32Array, state: Float32Array, hAt: number, cAt: number): number {
    const heap = this.heap;
    const lstmInput = this.lstmInputAt / 4;
    const gates = this.gatesAt / 4;
    const { lstmBias, outWeight } = this;
    for (let i = 0; i < HIDDEN; i++) {
      heap[lstmInput + i] = encoded[i]!;
      heap[lstmInput + HIDDEN + i] = state[hAt + i]!;
    }
    this.gemv(this.lstmWeightAt, this.lstmInputAt, this.gatesAt, GATES, 2 * HIDDEN);
    let logit = this.outBias;
    for (let i = 0; i < HIDDEN; i++) {
      const inputGate = sigmoid(lstmBias[i]! + heap[gates + i]!);
      const forgetGate = sigmoid(lstmBias[HIDDEN + i]! + heap[gates + HIDDEN + i]!);
      const cell = tanh(lstmBias[2 * HIDDEN + i]! + heap[gates + 2 * HIDDEN + i]!);
      const outputGate = sigmoid(lstmBias[3 * HIDDEN + i]! + heap[gates + 3 * HIDDEN + i]!);
      const c = forgetGate * state[cAt + i]! + inputGate * cell;
      const h = outputGate * tanh(c);
      state[cAt + i] = c;
      state[hAt + i] = h;
      if (h > 0) logit += outWeight[i]! * h;
    }
    return sigmoid(logit);
  }
}

/**
 * A SileroBatchRunner on the TypeScript network, in this thread: the batch's streams one after
 * the other, each for `steps` windows. Same contract as onnxruntime's (silero-batcher.ts). `network`
 * is a new one of the model file unless given.
 */
export function networkRunner(
  sampleRateHz: SileroSampleRateHz,
  network = new SileroNetwork(sampleRateHz),
): SileroBatchRunner {
  let output = new Float32Array(0);
  let stateN = new Float32Array(0);
  return {
    run(input, state, batchSize, rowSamples, steps = 1): Promise<SileroBatchResult> {
      if (rowSamples !== network.rowSamples) {
        return Promise.reject(new RangeError(`Silero window of ${rowSamples} samples, expected ${network.rowSamples}`));
      }
      if (steps < 1) return Promise.reject(new RangeError(`Silero VAD run needs at least one step, got ${steps}`));
      if (output.length < batchSize) output = new Float32Array(batchSize * 2);
      if (stateN.length < 2 * batchSize * HIDDEN) stateN = new Float32Array(4 * batchSize * HIDDEN);
      const nextState = stateN.subarray(0, 2 * batchSize * HIDDEN);
      nextState.set(state.subarray(0, 2 * batchSize * HIDDEN));
      for (let stream = 0; stream < batchSize; stream++) {
        const hAt = stream * HIDDEN;
        const cAt = (batchSize + stream) * HIDDEN;
        for (let step = 0; step < steps; step++) {
          const at = (step * batchSize + stream) * rowSamples;
          output[stream] = network.run(input, at, nextState, hAt, cAt);
        }
      }
      return Promise.resolve({ output: output.subarray(0, batchSize), stateN: nextState });
    },
  };
}

const networkBatchers = new Map<SileroSampleRateHz, SileroBatcher>();

/**
 * The process-wide batcher on the TypeScript network, in the event loop; calls share it (each
 * keeps its own state). Windows that arrive in the same turn of the event loop run together: there
 * is no per-run message or wake-up to save, so nothing waits longer for company.
 */
export function networkSileroBatcher(sampleRateHz: SileroSampleRateHz = 8000): SileroBatcher {
  let batcher = networkBatchers.get(sampleRateHz);
  if (!batcher) {
    batcher = new SileroBatcher(networkRunner(sampleRateHz));
    networkBatchers.set(sampleRateHz, batcher);
  }
  return batcher;
}

/**
 * Reads the model's weights and builds the 8 kHz network ahead of the first call (tens of ms,
 * once). Resolves with how long that took; failures are the caller's to log.
 */
export async function warmSileroNetwork(sampleRateHz: SileroSampleRateHz = 8000): Promise<number> {
  const startedAt = performance.now();
  const { windowSamples, contextSamples } = SILERO_GEOMETRY[sampleRateHz];
  await networkSileroBatcher(sampleRateHz).infer(
    new Float32Array(contextSamples + windowSamples),
    new Float32Array(SILERO_STATE_SIZE),
  );
  return performance.now() - startedAt;
}

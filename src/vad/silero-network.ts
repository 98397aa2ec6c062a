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
 * What runs where, per window: JavaScript copies the window's samples (with the STFT's reflect
 * padding) and the stream's LSTM state into the module's memory, calls the kernels in order, and
 * copies the new state out and takes the final sigmoid. Everything between runs in WebAssembly, on
 * numbers that stay in the module's memory: the FFT's packing, butterflies and magnitudes; each
 * convolution, reading its columns in place from activations laid out frame by frame with a frame
 * of zeros either side (its padding), bias and ReLU applied as the product is stored, two output
 * frames per pass over the weights; the last convolution writing next to h, so that [x; h] is the
 * LSTM's input as it lies; the LSTM's product with its bias; and its gates, new state and the
 * output layer's sum, with a float32 exp (simd-kernels.ts: its error is a few float32 roundings,
 * far inside what the tests allow against onnxruntime).
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

const ceil4 = (n: number) => Math.ceil(n / 4) * 4;

/** Bump allocator over the kernels' module memory: byte offsets, 16-byte aligned. */
class Layout {
  bytes = 0;
  take(floats: number): number {
    const at = this.bytes;
    this.bytes += ceil4(floats) * 4;
    return at;
  }
}

/**
 * Activations in module memory, frame by frame ([frame][channel], each frame `frameFloats` long,
 * zero past the channels). A convolution's input has a frame of zeros on either side: its padding,
 * so that the three frames a kernel covers are always next to each other and a column is a run of
 * memory, read in place.
 */
interface Activations {
  /** Byte offset of frame 0. */
  firstAt: number;
  frameFloats: number;
}

function paddedActivations(layout: Layout, frames: number, channels: number): Activations {
  const frameFloats = ceil4(channels);
  return { firstAt: layout.take((frames + 2) * frameFloats) + 4 * frameFloats, frameFloats };
}

interface PlacedConv {
  layer: ConvLayer;
  /**
   * The kernel taps that ever meet an input frame, consecutive: with one or two input frames, the
   * padding leaves some taps only zeros to multiply (the last layer uses only its middle tap).
   */
  taps: number[];
  /** Weights as [out][tap][input frame's floats], zero past the input channels; byte offset. */
  weightAt: number;
  biasAt: number;
  /** taps × the input frame's floats: a multiple of 4. */
  width: number;
  input: Activations;
  output: Activations;
  outFrames: number;
}

/**
 * One rate's network: its weights copied into the kernels' module memory (simd-kernels.ts), its
 * activations and scratch there too, so nothing is allocated per window and nothing moves between
 * JavaScript arrays and the module but the window's samples in and the LSTM's state in and out.
 * Not for concurrent use: one window runs at a time (the batcher runs them one after the other).
 */
export class SileroNetwork {
  readonly rowSamples: number;
  private readonly kernels: SimdKernels;
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
  /** The basis, a zero bias and the gemv's output, or the FFT's tables: one or the other is -1. */
  private readonly basisAt: number;
  private readonly zerosAt: number;
  private readonly stftAt: number;
  private readonly fftAt: number;
  private readonly paddedAt: number;
  /** The STFT's magnitudes, the first convolution's input. */
  private readonly spectrum: Activations;
  private readonly convs: PlacedConv[];
  /** [the encoder's output (128) | h (128)]: the LSTM's input, the last convolution's output. */
  private readonly lstmInputAt: number;
  private readonly lstmWeightAt: number;
  private readonly lstmBiasAt: number;
  private readonly gatesAt: number;
  private readonly cellAt: number;
  private readonly outWeightAt: number;
  private readonly outBias: number;

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
    this.zerosAt = window ? -1 : layout.take(this.basisRows);
    this.stftAt = window ? -1 : layout.take(this.basisRows);
    this.fftAt = window ? layout.take(FourFrameFft.bytes(this.taps) / 4) : -1;
    this.paddedAt = layout.take(this.rowSamples + this.padSamples);
    this.spectrum = paddedActivations(layout, this.frames, this.bins);
    this.lstmInputAt = layout.take(2 * HIDDEN);
    let input = this.spectrum;
    let frames = this.frames;
    this.convs = weights.encoder.map((layer, index) => {
      const inFrames = frames;
      frames = Math.floor((frames + 2 - KERNEL) / layer.stride) + 1;
      const outFrames = frames;
      const taps = [0, 1, 2].filter((k) =>
        Array.from({ length: outFrames }, (_, frame) => frame * layer.stride - 1 + k).some(
          (source) => source >= 0 && source < inFrames,
        ),
      );
      if (taps.some((k, t) => k !== taps[0]! + t)) throw new Error('Silero model: a convolution whose taps skip one');
      if (layer.outChannels % 4 !== 0) throw new Error('Silero model: a convolution with channels not a multiple of 4');
      const last = index === weights.encoder.length - 1;
      const output = last
        ? { firstAt: this.lstmInputAt, frameFloats: layer.outChannels }
        : paddedActivations(layout, outFrames, layer.outChannels);
      const width = taps.length * input.frameFloats;
      const placed: PlacedConv = {
        layer,
        taps,
        weightAt: layout.take(layer.outChannels * width),
        biasAt: layout.take(layer.outChannels),
        width,
        input,
        output,
        outFrames,
      };
      input = output;
      return placed;
    });
    if (frames !== 1 || weights.encoder.at(-1)!.outChannels !== HIDDEN) {
      throw new Error('Silero model: the encoder does not end in one frame of 128 channels');
    }
    this.lstmWeightAt = layout.take(GATES * 2 * HIDDEN);
    this.lstmBiasAt = layout.take(GATES);
    this.gatesAt = layout.take(GATES);
    this.cellAt = layout.take(HIDDEN);
    this.outWeightAt = layout.take(HIDDEN);

    // A new memory is zeros: the activations' padding frames and channels stay so, never written.
    this.kernels = createSimdKernels(layout.bytes);
    const heap = new Float32Array(this.kernels.memory.buffer);
    this.heap = heap;
    if (window) {
      this.fft = new FourFrameFft(this.kernels, this.fftAt, window.window, {
        at: this.spectrum.firstAt,
        frameFloats: this.spectrum.frameFloats,
      });
    } else {
      this.fft = undefined;
      heap.set(weights.basis, this.basisAt / 4);
    }
    for (const conv of this.convs) {
      const { weight, bias, inChannels, outChannels } = conv.layer;
      const frameFloats = conv.input.frameFloats;
      for (let o = 0; o < outChannels; o++) {
        conv.taps.forEach((k, t) => {
          for (let channel = 0; channel < inChannels; channel++) {
            heap[conv.weightAt / 4 + o * conv.width + t * frameFloats + channel] =
              weight[(o * inChannels + channel) * KERNEL + k]!;
          }
        });
      }
      heap.set(bias, conv.biasAt / 4);
    }
    heap.set(weights.lstmWeight, this.lstmWeightAt / 4);
    heap.set(weights.lstmBias, this.lstmBiasAt / 4);
    heap.set(weights.outWeight, this.outWeightAt / 4);
    this.outBias = weights.outBias;
  }

  /**
   * Runs one window: `input[at..at+rowSamples)` is the context followed by the window, scaled to
   * -1..1; the stream's state is `h` at `state[hAt..hAt+128)` and `c` at `state[cAt..cAt+128)`,
   * read, then overwritten with the next state. Returns the speech probability.
   */
  run(input: Float32Array, at: number, state: Float32Array, hAt: number, cAt: number): number {
    const heap = this.heap;
    const h = this.lstmInputAt / 4 + HIDDEN;
    const c = this.cellAt / 4;
    for (let i = 0; i < HIDDEN; i++) {
      heap[h + i] = state[hAt + i]!;
      heap[c + i] = state[cAt + i]!;
    }
    this.stft(input, at);
    const { gemvRelu, gemvRelu2 } = this.kernels;
    for (const conv of this.convs) {
      // Output frame f's column starts at input frame f·stride - 1 + its first tap (-1: padding).
      const { input: from, output: to, layer } = conv;
      const columnStep = layer.stride * 4 * from.frameFloats;
      const outStep = 4 * to.frameFloats;
      let columnAt = from.firstAt + (conv.taps[0]! - 1) * 4 * from.frameFloats;
      let outAt = to.firstAt;
      let frame = 0;
      // Two frames at a time where there are two: each weight loaded once for both.
      for (; frame + 1 < conv.outFrames; frame += 2) {
        gemvRelu2(conv.weightAt, columnAt, outAt, conv.biasAt, layer.outChannels, conv.width, columnStep, outStep);
        columnAt += 2 * columnStep;
        outAt += 2 * outStep;
      }
      if (frame < conv.outFrames) gemvRelu(conv.weightAt, columnAt, outAt, conv.biasAt, layer.outChannels, conv.width);
    }
    this.kernels.gemv(this.lstmWeightAt, this.lstmInputAt, this.gatesAt, this.lstmBiasAt, GATES, 2 * HIDDEN);
    const logit = this.kernels.lstmCell(this.gatesAt, this.cellAt, this.lstmInputAt + 4 * HIDDEN, this.outWeightAt);
    for (let i = 0; i < HIDDEN; i++) {
      state[hAt + i] = heap[h + i]!;
      state[cAt + i] = heap[c + i]!;
    }
    return sigmoid(this.outBias + logit);
  }

  private stft(input: Float32Array, at: number): void {
    const heap = this.heap;
    const padded = this.paddedAt / 4;
    const rowSamples = this.rowSamples;
    for (let i = 0; i < rowSamples; i++) heap[padded + i] = input[at + i]!;
    // Reflect padding on the right: the last sample is the mirror, not repeated.
    for (let j = 0; j < this.padSamples; j++) heap[padded + rowSamples + j] = input[at + rowSamples - 2 - j]!;
    if (this.fft) {
      // The magnitudes land where the first convolution reads them.
      this.fft.run(padded, this.hop);
      return;
    }
    const bins = this.bins;
    const spectrum = this.stftAt / 4;
    let out = this.spectrum.firstAt / 4;
    for (let frame = 0; frame < this.frames; frame++, out += this.spectrum.frameFloats) {
      this.kernels.gemv(
        this.basisAt,
        this.paddedAt + frame * this.hop * 4,
        this.stftAt,
        this.zerosAt,
        this.basisRows,
        this.taps,
      );
      for (let bin = 0; bin < bins; bin++) {
        const re = heap[spectrum + bin]!;
        const im = heap[spectrum + bins + bin]!;
        heap[out + bin] = Math.sqrt(re * re + im * im);
      }
    }
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
    runNow(rows, steps, state) {
      if (rows.length !== steps * network.rowSamples) {
        throw new RangeError(`Silero rows of ${rows.length} samples, expected ${steps} of ${network.rowSamples}`);
      }
      let probability = 0;
      for (let step = 0; step < steps; step++)
        probability = network.run(rows, step * network.rowSamples, state, 0, HIDDEN);
      return probability;
    },
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

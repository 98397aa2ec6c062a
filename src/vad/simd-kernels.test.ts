import { describe, expect, it } from 'vitest';
import { createSimdKernels } from './simd-kernels.js';

/**
 * The kernels the network's tests cover only end to end, checked alone: the LSTM cell's float32
 * exp against float64 arithmetic over the gates' whole range, saturation included, and the
 * two-frame product against the one-frame product it stands for.
 */

/** Repeatable numbers in -1..1. */
const noise = (i: number) => Math.sin(i * 12.9898 + 78.233);

describe('lstmCell', () => {
  it('gives float64’s new state and output sum to float32 rounding, saturating without NaN', () => {
    const kernels = createSimdKernels(65536);
    const heap = new Float32Array(kernels.memory.buffer);
    const [gatesAt, cAt, hAt, outWeightAt] = [0, 2048, 2560, 3072];
    let worst = 0;
    // Gates up to ±4, then up to ±400 (far past exp's clamp: the gates saturate).
    for (const scale of [4, 40, 400]) {
      for (let trial = 0; trial < 50; trial++) {
        const gates = Float32Array.from({ length: 512 }, (_, i) => scale * noise(trial * 1000 + i));
        const c = Float32Array.from({ length: 128 }, (_, i) => 5 * noise(trial * 1000 + 600 + i));
        const outWeight = Float32Array.from({ length: 128 }, (_, i) => noise(trial * 1000 + 800 + i));
        heap.set(gates, gatesAt / 4);
        heap.set(c, cAt / 4);
        heap.set(outWeight, outWeightAt / 4);
        const sum = kernels.lstmCell(gatesAt, cAt, hAt, outWeightAt);
        const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
        let expectedSum = 0;
        for (let u = 0; u < 128; u++) {
          const cell = sigmoid(gates[128 + u]!) * c[u]! + sigmoid(gates[u]!) * Math.tanh(gates[256 + u]!);
          const h = sigmoid(gates[384 + u]!) * Math.tanh(cell);
          expectedSum += outWeight[u]! * Math.max(0, h);
          // Relative to the cell's size past 1: a float32 rounding of 5 is 5e-7.
          worst = Math.max(worst, Math.abs(heap[cAt / 4 + u]! - cell) / Math.max(1, Math.abs(cell)));
          worst = Math.max(worst, Math.abs(heap[hAt / 4 + u]! - h));
        }
        expect(Math.abs(sum - expectedSum)).toBeLessThan(1e-5);
      }
    }
    expect(worst).toBeLessThan(5e-7);
  });
});

describe('gemvRelu2', () => {
  it('gives what gemvRelu gives for each of its two frames', () => {
    const kernels = createSimdKernels(65536);
    const heap = new Float32Array(kernels.memory.buffer);
    const [rows, cols] = [12, 20];
    const [wAt, biasAt, xAt, oneAt, twoAt] = [0, 1024, 1088, 2048, 3072];
    heap.set(
      Float32Array.from({ length: rows * cols }, (_, i) => noise(i)),
      wAt / 4,
    );
    heap.set(
      Float32Array.from({ length: rows }, (_, i) => noise(500 + i)),
      biasAt / 4,
    );
    // Two frames of x, 28 floats apart.
    heap.set(
      Float32Array.from({ length: 28 + cols }, (_, i) => noise(700 + i)),
      xAt / 4,
    );
    for (const frame of [0, 1]) kernels.gemvRelu(wAt, xAt + 4 * 28 * frame, oneAt + 4 * 16 * frame, biasAt, rows, cols);
    kernels.gemvRelu2(wAt, xAt, twoAt, biasAt, rows, cols, 4 * 28, 4 * 16);
    const one = heap.slice(oneAt / 4, oneAt / 4 + 32);
    const two = heap.slice(twoAt / 4, twoAt / 4 + 32);
    expect(two).toEqual(one);
    // Some outputs cut to 0 by the ReLU, some not.
    expect(one.subarray(0, rows).some((v) => v === 0)).toBe(true);
    expect(one.subarray(0, rows).some((v) => v > 0)).toBe(true);
  });
});

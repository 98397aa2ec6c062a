/**
 * The Silero network's WebAssembly kernels (silero-network.ts), in float32 with 128-bit SIMD
 * (f32x4); plain JavaScript loops over the same numbers take several times longer, since V8 does
 * not vectorise them. Pointers are byte offsets into the module's own memory, where the network
 * keeps its weights, its activations and its scratch: a window's numbers never leave it between
 * the STFT's input and the LSTM's new state.
 *
 * - `gemv(w, x, y, bias, rows, cols)`: y[r] = bias[r] + Σ_c w[r·cols + c] · x[c], four rows at a
 *   time; nearly all of the network's work. `rows` and `cols` must be multiples of 4 (the network
 *   pads its matrices). `gemvRelu` is the same with max(0, ·) on each y[r]: a convolution's output
 *   frame, stored finished; `gemvRelu2(…, xStep, yStep)` does two frames (x and x + xStep, stored
 *   at y and y + yStep) in one pass over the weights.
 * - `pack4(x, table, z, end, hopBytes)`, `fft4(z, twiddles, end)` and `spectrum4(z, twiddles,
 *   out, end, frameBytes)`: the STFT's FFT of four frames at once, one frame per lane, from the
 *   samples to the magnitudes (described at their bodies below; windowed-fft.ts lays out their data).
 * - `lstmCell(gates, c, h, outWeight)`: the LSTM's gates, new state and the output layer's sum, four
 *   units at a time, with a float32 `exp` of its own (WebAssembly has none; described below).
 *
 * The module is a few kilobytes, assembled here rather than shipped as a binary so that what it
 * does can be read: each instruction below is named beside its opcode (the WebAssembly core
 * specification's binary format, with the fixed-width SIMD proposal that Node has shipped since
 * version 16).
 */

const I32 = 0x7f;
const F32 = 0x7d;
const V128 = 0x7b;

const op = {
  loop: 0x03,
  brIf: 0x0d,
  end: 0x0b,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  f32Store: 0x38,
  i32Load: 0x28,
  i32Const: 0x41,
  i32LtU: 0x49,
  i32LeU: 0x4d,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Mul: 0x6c,
  i32Shl: 0x74,
  f32Add: 0x92,
  emptyBlockType: 0x40,
} as const;

/** SIMD instructions: the 0xfd prefix, then the instruction's number as an unsigned LEB128. */
const simd = {
  v128Load: [0xfd, 0x00],
  v128Store: [0xfd, 0x0b],
  v128Const: [0xfd, 0x0c],
  i8x16Shuffle: [0xfd, 0x0d],
  f32x4ExtractLane: [0xfd, 0x1f],
  v128Load64Lane: [0xfd, 0x57],
  v128Store32Lane: [0xfd, 0x5a],
  v128Load64Zero: [0xfd, 0x5d],
  f32x4Nearest: [0xfd, 0x6a],
  i32x4Shl: [0xfd, 0xab, 0x01],
  i32x4Add: [0xfd, 0xae, 0x01],
  f32x4Neg: [0xfd, 0xe1, 0x01],
  f32x4Sqrt: [0xfd, 0xe3, 0x01],
  f32x4Add: [0xfd, 0xe4, 0x01],
  f32x4Sub: [0xfd, 0xe5, 0x01],
  f32x4Mul: [0xfd, 0xe6, 0x01],
  f32x4Div: [0xfd, 0xe7, 0x01],
  f32x4Pmin: [0xfd, 0xea, 0x01],
  f32x4Pmax: [0xfd, 0xeb, 0x01],
  i32x4TruncSatF32x4S: [0xfd, 0xf8, 0x01],
} as const;

function uleb(value: number): number[] {
  const bytes: number[] = [];
  let rest = value >>> 0;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest !== 0) byte |= 0x80;
    bytes.push(byte);
  } while (rest !== 0);
  return bytes;
}

function name(text: string): number[] {
  const bytes = [...new TextEncoder().encode(text)];
  return [...uleb(bytes.length), ...bytes];
}

function section(id: number, content: number[]): number[] {
  return [id, ...uleb(content.length), ...content];
}

/** v128.load / v128.store at the address on the stack plus `offset` bytes (alignment hint 16). */
const load = (offset: number) => [...simd.v128Load, 4, ...uleb(offset)];
const store = (offset: number) => [...simd.v128Store, 4, ...uleb(offset)];
const get = (local: number) => [op.localGet, local];
const set = (local: number) => [op.localSet, local];
const i32 = (value: number) => [op.i32Const, value]; // 0..63: one byte of signed LEB128
const f32x4 = (instruction: readonly number[], ...operands: number[][]) => [...operands.flat(), ...instruction];
const mul = (a: number, b: number) => f32x4(simd.f32x4Mul, get(a), get(b));
/** v128.const of four equal lanes, each the little-endian bytes `write` puts in 4 bytes. */
function constant(write: (view: DataView) => void): number[] {
  const lane = new DataView(new ArrayBuffer(4));
  write(lane);
  const bytes = [0, 1, 2, 3].map((b) => lane.getUint8(b));
  return [...simd.v128Const, ...bytes, ...bytes, ...bytes, ...bytes];
}
const splat = (value: number) => constant((lane) => lane.setFloat32(0, value, true));
const splatI32 = (value: number) => constant((lane) => lane.setInt32(0, value, true));
/** i8x16.shuffle picking float32 lanes: 0..3 from the first operand, 4..7 from the second. */
const lanes = (picks: number[]) => [
  ...simd.i8x16Shuffle,
  ...picks.flatMap((lane) => [0, 1, 2, 3].map((b) => 4 * lane + b)),
];

// The products' parameters, by index: gemvRelu2 has two more.
const [W, X, Y, BIAS, ROWS, COLS, X_STEP, Y_STEP] = [0, 1, 2, 3, 4, 5, 6, 7];

/**
 * gemv, gemvRelu or gemvRelu2, by `relu` and `frames`: four rows per turn of the outer loop, four
 * columns per turn of the inner one, each row's products gathered in an f32x4 accumulator per
 * frame; then y[r..r+4) = the four rows' sums plus their biases (with `relu`, pmax(0, v): v where
 * v > 0, else 0), stored at once. With two frames, each weight loaded serves both: x and
 * x + xStep, stored at y and y + yStep.
 */
function gemvBody(relu: boolean, frames: 1 | 2): number[] {
  // Locals, after the parameters: 6 × i32 (y end, row stride in bytes, column offset, rows 1..3 of
  // the four), then v128s (4 accumulators and an x per frame, a weight, two partial sums).
  const first = frames === 1 ? 6 : 8;
  const [Y_END, STRIDE, C, W1, W2, W3] = [first, first + 1, first + 2, first + 3, first + 4, first + 5];
  const ACC = [0, 1].slice(0, frames).map((f) => [0, 1, 2, 3].map((k) => first + 6 + 4 * f + k));
  const XV = [0, 1].slice(0, frames).map((f) => first + 6 + 4 * frames + f);
  const WV = first + 6 + 5 * frames;
  const [S01, S23] = [WV + 1, WV + 2];
  const rows = [get(W), get(W1), get(W2), get(W3)];
  /**
   * One frame's four row sums as one f32x4 plus their biases: its accumulators interleaved in
   * pairs and added (lanes 0+2 and 1+3 of each), then the two halves of those.
   */
  const fourSums = (acc: number[]) => [
    ...f32x4(
      simd.f32x4Add,
      [...get(acc[0]!), ...get(acc[1]!), ...lanes([0, 4, 1, 5])],
      [...get(acc[0]!), ...get(acc[1]!), ...lanes([2, 6, 3, 7])],
    ),
    ...set(S01),
    ...f32x4(
      simd.f32x4Add,
      [...get(acc[2]!), ...get(acc[3]!), ...lanes([0, 4, 1, 5])],
      [...get(acc[2]!), ...get(acc[3]!), ...lanes([2, 6, 3, 7])],
    ),
    ...set(S23),
    ...f32x4(
      simd.f32x4Add,
      [...get(S01), ...get(S23), ...lanes([0, 1, 4, 5])],
      [...get(S01), ...get(S23), ...lanes([2, 3, 6, 7])],
    ),
    ...get(BIAS),
    ...load(0),
    ...simd.f32x4Add,
  ];
  const finished = (acc: number[]) => (relu ? f32x4(simd.f32x4Pmax, splat(0), fourSums(acc)) : fourSums(acc));
  return [
    // locals: 6 × i32, 5 × frames + 3 × v128
    2,
    6,
    I32,
    5 * frames + 3,
    V128,
    // yEnd = y + rows * 4; stride = cols * 4
    ...[...get(Y), ...get(ROWS), ...i32(2), op.i32Shl, op.i32Add, ...set(Y_END)],
    ...[...get(COLS), ...i32(2), op.i32Shl, ...set(STRIDE)],
    op.loop, // four rows per turn
    op.emptyBlockType,
    ...[...get(W), ...get(STRIDE), op.i32Add, op.localTee, W1, ...get(STRIDE), op.i32Add, op.localTee, W2],
    ...[...get(STRIDE), op.i32Add, ...set(W3)],
    ...ACC.flat().flatMap((acc) => [...splat(0), ...set(acc)]),
    ...[...i32(0), ...set(C)],
    op.loop, // four columns per turn
    op.emptyBlockType,
    ...[...get(X), ...get(C), op.i32Add, ...load(0), ...set(XV[0]!)],
    ...(frames === 2 ? [...get(X), ...get(X_STEP), op.i32Add, ...get(C), op.i32Add, ...load(0), ...set(XV[1]!)] : []),
    // acc[f][k] += w_k[c..c+4) · xv[f]
    ...rows.flatMap((row, k) => [
      ...[...row, ...get(C), op.i32Add, ...load(0), ...set(WV)],
      ...XV.flatMap((xv, f) => [...f32x4(simd.f32x4Add, get(ACC[f]![k]!), mul(WV, xv)), ...set(ACC[f]![k]!)]),
    ]),
    ...[...get(C), ...i32(16), op.i32Add, op.localTee, C, ...get(STRIDE), op.i32LtU, op.brIf, 0],
    op.end,
    ...[...get(Y), ...finished(ACC[0]!), ...store(0)],
    ...(frames === 2 ? [...get(Y), ...get(Y_STEP), op.i32Add, ...finished(ACC[1]!), ...store(0)] : []),
    // w += 4 rows; bias and y += 4 floats; again while y < yEnd
    ...[...get(W3), ...get(STRIDE), op.i32Add, ...set(W)],
    ...[...get(BIAS), ...i32(16), op.i32Add, ...set(BIAS)],
    ...[...get(Y), ...i32(16), op.i32Add, op.localTee, Y, ...get(Y_END), op.i32LtU, op.brIf, 0],
    op.end,
    op.end,
  ];
}

/**
 * pack4(x, table, z, end, hopBytes): fft4's input from four frames of samples, the frames at x,
 * x + hop, x + 2·hop, x + 3·hop (bytes). For each point z[p] (32 bytes, up to end), `table` holds
 * 48 bytes: the byte offset in a frame of the sample pair that goes there (an i32, then 12 unused
 * bytes), then [w_even ×4][w_odd ×4], the window's weights for that pair. z[p] = w_even·x[2m] +
 * i·w_odd·x[2m+1] in each frame's lane: the pairs of the four frames loaded 8 bytes at a time, then
 * their even and odd samples shuffled apart.
 */
const [PX, PTABLE, PZ, PEND, PHOP, PAT, PAIRS01, PAIRS23] = [0, 1, 2, 3, 4, 5, 6, 7];
/** v128.load64_zero / v128.load64_lane (alignment 2^3): a frame's sample pair. */
const loadPair = [...simd.v128Load64Zero, 3, 0];
const loadPairInto = (lane: number) => [...simd.v128Load64Lane, 3, 0, lane];
const packBody = [
  // locals: 1 × i32 (the pair's address in frame 0), 2 × v128
  2,
  1,
  I32,
  2,
  V128,
  op.loop, // one point per turn
  op.emptyBlockType,
  ...[...get(PX), ...get(PTABLE), op.i32Load, 2, 0, op.i32Add, ...set(PAT)],
  // pairs01 = [x0 y0 x1 y1] of frames 0 and 1, pairs23 the same of frames 2 and 3
  ...[...get(PAT), ...loadPair, ...set(PAIRS01)],
  ...[...get(PAT), ...get(PHOP), op.i32Add, ...get(PAIRS01), ...loadPairInto(1), ...set(PAIRS01)],
  ...[...get(PAT), ...get(PHOP), ...i32(2), op.i32Mul, op.i32Add, ...loadPair, ...set(PAIRS23)],
  ...[...get(PAT), ...get(PHOP), ...i32(3), op.i32Mul, op.i32Add, ...get(PAIRS23), ...loadPairInto(1), ...set(PAIRS23)],
  ...[
    ...get(PZ),
    ...f32x4(simd.f32x4Mul, [...get(PAIRS01), ...get(PAIRS23), ...lanes([0, 2, 4, 6])], [...get(PTABLE), ...load(16)]),
    ...store(0),
  ],
  ...[
    ...get(PZ),
    ...f32x4(simd.f32x4Mul, [...get(PAIRS01), ...get(PAIRS23), ...lanes([1, 3, 5, 7])], [...get(PTABLE), ...load(32)]),
    ...store(16),
  ],
  ...[...get(PTABLE), ...i32(48), op.i32Add, ...set(PTABLE)],
  ...[...get(PZ), ...i32(32), op.i32Add, op.localTee, PZ, ...get(PEND), op.i32LtU, op.brIf, 0],
  op.end,
  op.end,
];

/**
 * fft4(z, twiddles, end): radix-2 decimation-in-time butterflies over M complex points from z up
 * to end (M = (end - z) / 32, a power of two), already in bit-reversed order. Point p is 32 bytes:
 * its real parts (f32x4, one lane per frame), then its imaginary parts. `twiddles` holds, for spans
 * of 2, 4, … M points in turn, the span's s/2 twiddles e^(-2πij/s) as [cos ×4][-sin ×4]: 32 bytes
 * each, so a stage's twiddles take as many bytes as its half span does.
 */
const [FZ, FTW, FEND, HALF, STAGE, GROUP, PA, PB, T, GROUP_END] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
const [WR, WI, BR, BI, TR, TI, AR, AI] = [10, 11, 12, 13, 14, 15, 16, 17];
const fftBody = [
  // locals: 7 × i32, 8 × v128
  2,
  7,
  I32,
  8,
  V128,
  ...[...i32(32), ...set(HALF)], // half a span, in bytes: one point at the first stage
  ...[...get(FTW), ...set(STAGE)],
  op.loop, // stages: spans of 2, 4, … M points
  op.emptyBlockType,
  ...[...get(FZ), ...set(GROUP)],
  op.loop, // groups of one span
  op.emptyBlockType,
  ...[...get(GROUP), ...set(PA), ...get(STAGE), ...set(T)],
  ...[...get(GROUP), ...get(HALF), op.i32Add, ...set(GROUP_END)],
  op.loop, // butterflies: a = z[pa], b = z[pa + half], (a, b) ← (a + w·b, a - w·b)
  op.emptyBlockType,
  ...[...get(PA), ...get(HALF), op.i32Add, ...set(PB)],
  ...[...get(T), ...load(0), ...set(WR), ...get(T), ...load(16), ...set(WI)],
  ...[...get(PB), ...load(0), ...set(BR), ...get(PB), ...load(16), ...set(BI)],
  ...f32x4(simd.f32x4Sub, mul(WR, BR), mul(WI, BI)),
  ...set(TR),
  ...f32x4(simd.f32x4Add, mul(WR, BI), mul(WI, BR)),
  ...set(TI),
  ...[...get(PA), ...load(0), ...set(AR), ...get(PA), ...load(16), ...set(AI)],
  ...[...get(PB), ...f32x4(simd.f32x4Sub, get(AR), get(TR)), ...store(0)],
  ...[...get(PB), ...f32x4(simd.f32x4Sub, get(AI), get(TI)), ...store(16)],
  ...[...get(PA), ...f32x4(simd.f32x4Add, get(AR), get(TR)), ...store(0)],
  ...[...get(PA), ...f32x4(simd.f32x4Add, get(AI), get(TI)), ...store(16)],
  ...[...get(T), ...i32(32), op.i32Add, ...set(T)],
  ...[...get(PA), ...i32(32), op.i32Add, op.localTee, PA, ...get(GROUP_END), op.i32LtU, op.brIf, 0],
  op.end,
  // group += 2 · half, again while group < end
  ...[...get(GROUP), ...get(HALF), ...i32(1), op.i32Shl, op.i32Add, op.localTee, GROUP],
  ...[...get(FEND), op.i32LtU, op.brIf, 0],
  op.end,
  // the next stage's twiddles follow this one's; half *= 2, again while half < end - z
  ...[...get(STAGE), ...get(HALF), op.i32Add, ...set(STAGE)],
  ...[...get(HALF), ...i32(1), op.i32Shl, op.localTee, HALF],
  ...[...get(FEND), ...get(FZ), op.i32Sub, op.i32LtU, op.brIf, 0],
  op.end,
  op.end,
];

/**
 * spectrum4(z, twiddles, out, end, frameBytes): after fft4 on the N/2 points z..end, packed from
 * N real samples as z[m] = x[2m] + i·x[2m+1], the magnitudes of the real FFT's N/2 + 1 bins, frame
 * by frame: bin k of frame f (lane f) at out + 4k + f·frameBytes, each frame's bins together, the
 * layout the first convolution reads. Bin k joins Z[k] and Z[N/2 - k] with the twiddle
 * e^(-2πik/N), stored at `twiddles` as [cos ×4][-sin ×4] for k = 0 … N/2. The samples must have
 * been halved: the split's own halving is left out. Writes Z[0] again at end (one more point), as
 * Z[N/2].
 */
const [SZ, STW, SOUT, SEND, SFRAME, SA, SB] = [0, 1, 2, 3, 4, 5, 6];
const [SAR, SAI, SBR, SBI, SC, SS, SUM_RE, SUM_IM, DIF_RE, DIF_IM, XR, XI] = [
  7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
];
/** v128.store32_lane: lane `lane` of the f32x4 on the stack at the address under it (alignment 2^2). */
const storeLane = (lane: number) => [...simd.v128Store32Lane, 2, 0, lane];
const spectrumBody = [
  // locals: 2 × i32, 12 × v128
  2,
  2,
  I32,
  12,
  V128,
  ...[...get(SEND), ...get(SZ), ...load(0), ...store(0), ...get(SEND), ...get(SZ), ...load(16), ...store(16)],
  ...[...get(SZ), ...set(SA), ...get(SEND), ...set(SB)],
  op.loop, // bins 0 … N/2: a = Z[k] from the start, b = Z[N/2 - k] from the end
  op.emptyBlockType,
  ...[...get(SA), ...load(0), ...set(SAR), ...get(SA), ...load(16), ...set(SAI)],
  ...[...get(SB), ...load(0), ...set(SBR), ...get(SB), ...load(16), ...set(SBI)],
  ...[...get(STW), ...load(0), ...set(SC), ...get(STW), ...load(16), ...set(SS)],
  // even = (a + conj b) / 2, odd = (a - conj b) / 2i; X = even + w·odd, here all doubled
  ...[...f32x4(simd.f32x4Add, get(SAR), get(SBR)), ...set(SUM_RE)],
  ...[...f32x4(simd.f32x4Add, get(SAI), get(SBI)), ...set(SUM_IM)],
  ...[...f32x4(simd.f32x4Sub, get(SBR), get(SAR)), ...set(DIF_RE)],
  ...[...f32x4(simd.f32x4Sub, get(SAI), get(SBI)), ...set(DIF_IM)],
  ...f32x4(simd.f32x4Sub, f32x4(simd.f32x4Add, get(SUM_RE), mul(SC, SUM_IM)), mul(SS, DIF_RE)),
  ...set(XR),
  ...f32x4(simd.f32x4Add, f32x4(simd.f32x4Add, get(DIF_IM), mul(SC, DIF_RE)), mul(SS, SUM_IM)),
  ...set(XI),
  ...[...f32x4(simd.f32x4Sqrt, f32x4(simd.f32x4Add, mul(XR, XR), mul(XI, XI))), ...set(XR)],
  // frame f's bin k at out + f · frameBytes
  ...[...get(SOUT), ...get(XR), ...storeLane(0)],
  ...[...get(SOUT), ...get(SFRAME), op.i32Add, ...get(XR), ...storeLane(1)],
  ...[...get(SOUT), ...get(SFRAME), ...i32(2), op.i32Mul, op.i32Add, ...get(XR), ...storeLane(2)],
  ...[...get(SOUT), ...get(SFRAME), ...i32(3), op.i32Mul, op.i32Add, ...get(XR), ...storeLane(3)],
  ...[...get(STW), ...i32(32), op.i32Add, ...set(STW)],
  ...[...get(SOUT), ...i32(4), op.i32Add, ...set(SOUT)],
  ...[...get(SB), ...i32(32), op.i32Sub, ...set(SB)],
  ...[...get(SA), ...i32(32), op.i32Add, op.localTee, SA, ...get(SEND), op.i32LeU, op.brIf, 0],
  op.end,
  op.end,
];

/**
 * e^x in float32, four lanes: the usual range reduction e^x = 2^n · e^r with n = round(x / ln 2)
 * and r = x - n·ln 2, then e^r by its Taylor series to r^7 and 2^n made from its bits (n + 127 in
 * the exponent field). ln 2 is taken in two parts, 355/512 (exact in 9 bits, so n times it is
 * exact) and the rest, so that r keeps its low bits. On |r| ≤ ln 2 / 2 the series' first term left
 * out, r^8/8!, is under 6e-9, a tenth of a float32 rounding: the error is the roundings of the
 * float32 arithmetic, a few units in the last place. x is first clamped to -87..88, where 2^n
 * stays a normal float: the gates need e^x only to saturate there, never to overflow to ∞.
 * Leaves e^x on the stack; uses locals EXP_R and EXP_N.
 */
const LN2_HI = 355 / 512;
const exp = (x: number[], EXP_R: number, EXP_N: number) => [
  // x = min(88, max(-87, x)): pmax(a, b) is b where a < b, pmin(a, b) is b where b < a
  ...f32x4(simd.f32x4Pmin, splat(88), f32x4(simd.f32x4Pmax, splat(-87), x)),
  ...set(EXP_R),
  ...[...f32x4(simd.f32x4Nearest, f32x4(simd.f32x4Mul, get(EXP_R), splat(Math.LOG2E))), ...set(EXP_N)],
  // r = x - n·ln2hi - n·ln2lo
  ...f32x4(
    simd.f32x4Sub,
    f32x4(simd.f32x4Sub, get(EXP_R), f32x4(simd.f32x4Mul, get(EXP_N), splat(LN2_HI))),
    f32x4(simd.f32x4Mul, get(EXP_N), splat(Math.LN2 - LN2_HI)),
  ),
  ...set(EXP_R),
  // p = 1/2! + r/3! + … + r^5/7!, by Horner's rule from 1/7!; then e^r = 1 + r + r²·p
  ...splat(1 / 5040),
  ...[720, 120, 24, 6, 2].flatMap((factorial) => [
    ...get(EXP_R),
    ...simd.f32x4Mul,
    ...splat(1 / factorial),
    ...simd.f32x4Add,
  ]),
  ...[...mul(EXP_R, EXP_R), ...simd.f32x4Mul, ...get(EXP_R), ...simd.f32x4Add, ...splat(1), ...simd.f32x4Add],
  // × 2^n: the bits of (n + 127) << 23
  ...[...get(EXP_N), ...simd.i32x4TruncSatF32x4S, ...splatI32(127), ...simd.i32x4Add, ...i32(23), ...simd.i32x4Shl],
  ...simd.f32x4Mul,
];

/**
 * lstmCell(gates, c, h, outWeight) → f32: one step of the LSTM cell over its 128 units, four at a
 * time. `gates` holds the four gates' pre-activations (bias included) as [i ×128][f ×128][g ×128]
 * [o ×128], PyTorch's order; c is the cell state, read and overwritten; the new h is written at h.
 * Returns Σ outWeight[u] · max(0, h[u]): the output layer's 1×1 convolution after its ReLU, bias
 * and sigmoid left to the caller.
 *   i, f, o = σ(gate) = 1 / (1 + e^-gate); g = tanh(gate) = 1 - 2 / (e^(2·gate) + 1)
 *   c = f·c + i·g; h = o·tanh(c)
 * tanh written that way stays finite at either end (exp's clamp: 2 / (e^88 + 1) leaves 1, and
 * 2 / (e^-87 + 1) leaves -1), and is off from tanh by about a float32 rounding of 1 at most, near
 * 0 as elsewhere: absolute errors of 1e-7, where onnxruntime's own float32 tanh has its own.
 */
const HIDDEN_BYTES = 128 * 4;
const [LG, LC, LH, LOW, LU] = [0, 1, 2, 3, 4];
const [GI, GF, GG, GO, CN, LACC, EXP_R, EXP_N] = [5, 6, 7, 8, 9, 10, 11, 12];
const at = (base: number) => [...get(base), ...get(LU), op.i32Add];
const sigmoid = (x: number[]) =>
  f32x4(simd.f32x4Div, splat(1), f32x4(simd.f32x4Add, splat(1), exp(f32x4(simd.f32x4Neg, x), EXP_R, EXP_N)));
const tanh = (x: number[]) =>
  f32x4(
    simd.f32x4Sub,
    splat(1),
    f32x4(simd.f32x4Div, splat(2), f32x4(simd.f32x4Add, exp(f32x4(simd.f32x4Add, x, x), EXP_R, EXP_N), splat(1))),
  );
const lstmBody = [
  // locals: 1 × i32 (the unit's byte offset), 8 × v128
  2,
  1,
  I32,
  8,
  V128,
  ...[...splat(0), ...set(LACC)],
  op.loop, // four units per turn
  op.emptyBlockType,
  ...[...sigmoid([...at(LG), ...load(0)]), ...set(GI)],
  ...[...sigmoid([...at(LG), ...load(HIDDEN_BYTES)]), ...set(GF)],
  ...[...tanh([...at(LG), ...load(2 * HIDDEN_BYTES)]), ...set(GG)],
  ...[...sigmoid([...at(LG), ...load(3 * HIDDEN_BYTES)]), ...set(GO)],
  // c = f·c + i·g
  ...[...f32x4(simd.f32x4Add, f32x4(simd.f32x4Mul, get(GF), [...at(LC), ...load(0)]), mul(GI, GG)), ...set(CN)],
  ...[...at(LC), ...get(CN), ...store(0)],
  // h = o·tanh(c), kept in GO
  ...[...f32x4(simd.f32x4Mul, get(GO), tanh(get(CN))), ...set(GO)],
  ...[...at(LH), ...get(GO), ...store(0)],
  // acc += outWeight · max(0, h)
  ...f32x4(
    simd.f32x4Add,
    get(LACC),
    f32x4(simd.f32x4Mul, [...at(LOW), ...load(0)], f32x4(simd.f32x4Pmax, splat(0), get(GO))),
  ),
  ...set(LACC),
  ...[...get(LU), ...i32(16), op.i32Add, op.localTee, LU, op.i32Const, ...[0x80, 0x04], op.i32LtU, op.brIf, 0], // 512, the units' bytes, as a signed LEB128
  op.end,
  // the four lanes of acc added up: the function's result
  ...[...get(LACC), ...simd.f32x4ExtractLane, 0, ...get(LACC), ...simd.f32x4ExtractLane, 1, op.f32Add],
  ...[...get(LACC), ...simd.f32x4ExtractLane, 2, op.f32Add, ...get(LACC), ...simd.f32x4ExtractLane, 3, op.f32Add],
  op.end,
];

function code(body: number[]): number[] {
  return [...uleb(body.length), ...body];
}

function moduleBytes(pages: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // types 0..4: (i32 × 6) → (), (i32 × 3) → (), (i32 × 5) → (), (i32 × 4) → (f32), (i32 × 8) → ()
    ...section(1, [
      5,
      ...[0x60, 6, I32, I32, I32, I32, I32, I32, 0],
      ...[0x60, 3, I32, I32, I32, 0],
      ...[0x60, 5, I32, I32, I32, I32, I32, 0],
      ...[0x60, 4, I32, I32, I32, I32, 1, F32],
      ...[0x60, 8, I32, I32, I32, I32, I32, I32, I32, I32, 0],
    ]),
    // functions 0..6 (gemv, gemvRelu, gemvRelu2, pack4, fft4, spectrum4, lstmCell): types 0, 0, 4, 2, 1, 2, 3
    ...section(3, [7, 0, 0, 4, 2, 1, 2, 3]),
    // one memory of `pages` 64 KiB pages, no maximum
    ...section(5, [1, 0x00, ...uleb(pages)]),
    ...section(7, [
      8,
      ...[...name('gemv'), 0x00, 0],
      ...[...name('gemvRelu'), 0x00, 1],
      ...[...name('gemvRelu2'), 0x00, 2],
      ...[...name('pack4'), 0x00, 3],
      ...[...name('fft4'), 0x00, 4],
      ...[...name('spectrum4'), 0x00, 5],
      ...[...name('lstmCell'), 0x00, 6],
      ...[...name('memory'), 0x02, 0],
    ]),
    ...section(10, [
      7,
      ...code(gemvBody(false, 1)),
      ...code(gemvBody(true, 1)),
      ...code(gemvBody(true, 2)),
      ...code(packBody),
      ...code(fftBody),
      ...code(spectrumBody),
      ...code(lstmBody),
    ]),
  ]);
}

/** The little of the WebAssembly JS API used here (the server's compile settings carry no DOM types). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array<ArrayBuffer>) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

export interface SimdKernels {
  /** The module's memory; views into it stay valid (it never grows). */
  readonly memory: { readonly buffer: ArrayBuffer };
  gemv(w: number, x: number, y: number, bias: number, rows: number, cols: number): void;
  gemvRelu(w: number, x: number, y: number, bias: number, rows: number, cols: number): void;
  gemvRelu2(
    w: number,
    x: number,
    y: number,
    bias: number,
    rows: number,
    cols: number,
    xStep: number,
    yStep: number,
  ): void;
  pack4(x: number, table: number, z: number, end: number, hopBytes: number): void;
  fft4(z: number, twiddles: number, end: number): void;
  spectrum4(z: number, twiddles: number, out: number, end: number, frameBytes: number): void;
  /** Returns the output layer's sum (before its bias), as a float32. */
  lstmCell(gates: number, c: number, h: number, outWeight: number): number;
}

/** A module instance with `bytes` of memory (rounded up to whole pages). Synchronous: the module is tiny. */
export function createSimdKernels(bytes: number): SimdKernels {
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
  const instance = new wasm.Instance(new wasm.Module(moduleBytes(pages)));
  return instance.exports as unknown as SimdKernels;
}

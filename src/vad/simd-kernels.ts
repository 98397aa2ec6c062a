/**
 * The Silero network's WebAssembly kernels (silero-network.ts), in float32 with 128-bit SIMD
 * (f32x4); plain JavaScript loops over the same numbers take several times longer, since V8 does
 * not vectorise them. Pointers are byte offsets into the module's own memory.
 *
 * - `gemv(w, x, y, rows, cols)`: y[r] = Σ_c w[r·cols + c] · x[c], four rows at a time; nearly all
 *   of the network's work. `rows` and `cols` must be multiples of 4 (the network pads its matrices).
 * - `fft4(z, twiddles, end)` and `spectrum4(z, twiddles, out, end)`: the STFT's FFT of four frames
 *   at once, one frame per lane (described at their bodies below; windowed-fft.ts lays out their data).
 *
 * The module is under a kilobyte, assembled here rather than shipped as a binary so that what
 * it does can be read: each instruction below is named beside its opcode (the WebAssembly core
 * specification's binary format, with the fixed-width SIMD proposal that Node has shipped since
 * version 16).
 */

const I32 = 0x7f;
const V128 = 0x7b;

const op = {
  block: 0x02,
  loop: 0x03,
  brIf: 0x0d,
  end: 0x0b,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  f32Store: 0x38,
  i32Const: 0x41,
  i32LtU: 0x49,
  i32LeU: 0x4d,
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Shl: 0x74,
  f32Add: 0x92,
  emptyBlockType: 0x40,
} as const;

/** SIMD instructions: the 0xfd prefix, then the instruction's number as an unsigned LEB128. */
const simd = {
  v128Load: [0xfd, 0x00],
  v128Store: [0xfd, 0x0b],
  v128Const: [0xfd, 0x0c],
  f32x4ExtractLane: [0xfd, 0x1f],
  f32x4Sqrt: [0xfd, 0xe3, 0x01],
  f32x4Add: [0xfd, 0xe4, 0x01],
  f32x4Sub: [0xfd, 0xe5, 0x01],
  f32x4Mul: [0xfd, 0xe6, 0x01],
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

// Parameters and locals, by index.
const W = 0;
const X = 1;
const Y = 2;
const ROWS = 3;
const COLS = 4;
const Y_END = 5;
const STRIDE = 6;
const C = 7;
const W1 = 8;
const W2 = 9;
const W3 = 10;
const ACC = [11, 12, 13, 14] as const;
const XV = 15;

const get = (local: number) => [op.localGet, local];
const set = (local: number) => [op.localSet, local];
const i32 = (value: number) => [op.i32Const, value]; // 0..63: one byte of signed LEB128
/** Alignment 2^4 = 16 bytes (a hint only), offset 0. */
const v128Load = [...simd.v128Load, 4, 0];

/** acc[k] += w_k[c..c+4) * xv, where w_k's address is on the stack. */
const accumulate = (k: number, rowAddress: number[]) => [
  ...get(ACC[k]!),
  ...rowAddress,
  ...get(C),
  op.i32Add,
  ...v128Load,
  ...get(XV),
  ...simd.f32x4Mul,
  ...simd.f32x4Add,
  ...set(ACC[k]!),
];

/** y[k] = the four lanes of acc[k] added up (stored at y + 4k). */
const storeSum = (k: number) => [
  ...get(Y),
  ...get(ACC[k]!),
  ...simd.f32x4ExtractLane,
  0,
  ...get(ACC[k]!),
  ...simd.f32x4ExtractLane,
  1,
  op.f32Add,
  ...get(ACC[k]!),
  ...simd.f32x4ExtractLane,
  2,
  op.f32Add,
  ...get(ACC[k]!),
  ...simd.f32x4ExtractLane,
  3,
  op.f32Add,
  op.f32Store,
  2, // alignment 2^2
  4 * k, // offset
];

const gemvBody = [
  // locals: 6 × i32 (y end, row stride in bytes, column offset, rows 1..3 of the four), 5 × v128
  2,
  6,
  I32,
  5,
  V128,
  // yEnd = y + rows * 4; stride = cols * 4
  ...get(Y),
  ...get(ROWS),
  ...i32(2),
  op.i32Shl,
  op.i32Add,
  ...set(Y_END),
  ...get(COLS),
  ...i32(2),
  op.i32Shl,
  ...set(STRIDE),
  op.block,
  op.emptyBlockType,
  op.loop, // four rows per turn
  op.emptyBlockType,
  ...get(W),
  ...get(STRIDE),
  op.i32Add,
  op.localTee,
  W1,
  ...get(STRIDE),
  op.i32Add,
  op.localTee,
  W2,
  ...get(STRIDE),
  op.i32Add,
  ...set(W3),
  ...[0, 1, 2, 3].flatMap((k) => [...simd.v128Const, ...new Array<number>(16).fill(0), ...set(ACC[k]!)]),
  ...i32(0),
  ...set(C),
  op.loop, // four columns per turn
  op.emptyBlockType,
  ...get(X),
  ...get(C),
  op.i32Add,
  ...v128Load,
  ...set(XV),
  ...accumulate(0, get(W)),
  ...accumulate(1, get(W1)),
  ...accumulate(2, get(W2)),
  ...accumulate(3, get(W3)),
  ...get(C),
  ...i32(16),
  op.i32Add,
  op.localTee,
  C,
  ...get(STRIDE),
  op.i32LtU,
  op.brIf,
  0,
  op.end,
  ...storeSum(0),
  ...storeSum(1),
  ...storeSum(2),
  ...storeSum(3),
  // w += 4 rows; y += 4 floats; again while y < yEnd
  ...get(W3),
  ...get(STRIDE),
  op.i32Add,
  ...set(W),
  ...get(Y),
  ...i32(16),
  op.i32Add,
  op.localTee,
  Y,
  ...get(Y_END),
  op.i32LtU,
  op.brIf,
  0,
  op.end,
  op.end,
  op.end,
];

/** v128.load / v128.store at the address on the stack plus `offset` bytes (alignment hint 16). */
const load = (offset: number) => [...simd.v128Load, 4, offset];
const store = (offset: number) => [...simd.v128Store, 4, offset];
const f32x4 = (instruction: readonly number[], ...operands: number[][]) => [...operands.flat(), ...instruction];
const mul = (a: number, b: number) => f32x4(simd.f32x4Mul, get(a), get(b));

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
 * spectrum4(z, twiddles, out, end): after fft4 on the N/2 points z..end, packed from N real
 * samples as z[m] = x[2m] + i·x[2m+1], the magnitudes of the real FFT's N/2 + 1 bins, one f32x4
 * (four frames) per bin at out. Bin k joins Z[k] and Z[N/2 - k] with the twiddle e^(-2πik/N),
 * stored at `twiddles` as [cos ×4][-sin ×4] for k = 0 … N/2. The samples must have been halved:
 * the split's own halving is left out. Writes Z[0] again at end (one more point), as Z[N/2].
 */
const [SZ, STW, SOUT, SEND, SA, SB] = [0, 1, 2, 3, 4, 5];
const [SAR, SAI, SBR, SBI, SC, SS, SUM_RE, SUM_IM, DIF_RE, DIF_IM, XR, XI] = [
  6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
];
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
  ...[...get(SOUT), ...f32x4(simd.f32x4Sqrt, f32x4(simd.f32x4Add, mul(XR, XR), mul(XI, XI))), ...store(0)],
  ...[...get(STW), ...i32(32), op.i32Add, ...set(STW)],
  ...[...get(SOUT), ...i32(16), op.i32Add, ...set(SOUT)],
  ...[...get(SB), ...i32(32), op.i32Sub, ...set(SB)],
  ...[...get(SA), ...i32(32), op.i32Add, op.localTee, SA, ...get(SEND), op.i32LeU, op.brIf, 0],
  op.end,
  op.end,
];

function code(body: number[]): number[] {
  return [...uleb(body.length), ...body];
}

function moduleBytes(pages: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // types 0, 1, 2: (i32 × 5), (i32 × 3), (i32 × 4) → ()
    ...section(1, [3, 0x60, 5, I32, I32, I32, I32, I32, 0, 0x60, 3, I32, I32, I32, 0, 0x60, 4, I32, I32, I32, I32, 0]),
    // functions 0, 1, 2 (gemv, fft4, spectrum4) have types 0, 1, 2
    ...section(3, [3, 0, 1, 2]),
    // one memory of `pages` 64 KiB pages, no maximum
    ...section(5, [1, 0x00, ...uleb(pages)]),
    ...section(7, [
      4,
      ...name('gemv'),
      0x00,
      0,
      ...name('fft4'),
      0x00,
      1,
      ...name('spectrum4'),
      0x00,
      2,
      ...name('memory'),
      0x02,
      0,
    ]),
    ...section(10, [3, ...code(gemvBody), ...code(fftBody), ...code(spectrumBody)]),
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
  gemv(w: number, x: number, y: number, rows: number, cols: number): void;
  fft4(z: number, twiddles: number, end: number): void;
  spectrum4(z: number, twiddles: number, out: number, end: number): void;
}

/** A module instance with `bytes` of memory (rounded up to whole pages). Synchronous: the module is tiny. */
export function createSimdKernels(bytes: number): SimdKernels {
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
  const instance = new wasm.Instance(new wasm.Module(moduleBytes(pages)));
  return instance.exports as unknown as SimdKernels;
}

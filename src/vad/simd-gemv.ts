/**
 * One WebAssembly function, `gemv(w, x, y, rows, cols)`: y[r] = Σ_c w[r·cols + c] · x[c] in float32,
 * four rows at a time with 128-bit SIMD (f32x4). It is nearly all of the Silero network's work
 * (silero-network.ts); plain JavaScript loops over the same numbers take several times longer,
 * since V8 does not vectorise them. Pointers are byte offsets into the module's own memory;
 * `rows` and `cols` must be multiples of 4 (the network pads its matrices).
 *
 * The module is a few hundred bytes, assembled here rather than shipped as a binary so that what
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
  i32Add: 0x6a,
  i32Shl: 0x74,
  f32Add: 0x92,
  emptyBlockType: 0x40,
} as const;

/** SIMD instructions: the 0xfd prefix, then the instruction's number as an unsigned LEB128. */
const simd = {
  v128Load: [0xfd, 0x00],
  v128Const: [0xfd, 0x0c],
  f32x4ExtractLane: [0xfd, 0x1f],
  f32x4Add: [0xfd, 0xe4, 0x01],
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

const body = [
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

function moduleBytes(pages: number): Uint8Array<ArrayBuffer> {
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    // type 0: (i32 × 5) → ()
    ...section(1, [1, 0x60, 5, I32, I32, I32, I32, I32, 0]),
    // function 0 has type 0
    ...section(3, [1, 0]),
    // one memory of `pages` 64 KiB pages, no maximum
    ...section(5, [1, 0x00, ...uleb(pages)]),
    ...section(7, [2, ...name('gemv'), 0x00, 0, ...name('memory'), 0x02, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** The little of the WebAssembly JS API used here (the server's compile settings carry no DOM types). */
interface WebAssemblyApi {
  Module: new (bytes: Uint8Array<ArrayBuffer>) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

export interface SimdGemv {
  /** The module's memory; views into it stay valid (it never grows). */
  readonly memory: { readonly buffer: ArrayBuffer };
  gemv(w: number, x: number, y: number, rows: number, cols: number): void;
}

/** A module instance with `bytes` of memory (rounded up to whole pages). Synchronous: the module is tiny. */
export function createSimdGemv(bytes: number): SimdGemv {
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
  const instance = new wasm.Instance(new wasm.Module(moduleBytes(pages)));
  return instance.exports as unknown as SimdGemv;
}

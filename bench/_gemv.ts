import { createSimdGemv } from '../src/vad/simd-gemv.js';
const g = createSimdGemv(1 << 20);
const f = new Float32Array(g.memory.buffer);
const rows = 512, cols = 256;
for (let i = 0; i < rows * cols; i++) f[i] = Math.random() - 0.5;
const xo = rows * cols; for (let i = 0; i < cols; i++) f[xo + i] = Math.random() - 0.5;
const yo = xo + cols;
g.gemv(0, xo * 4, yo * 4, rows, cols);
let md = 0;
for (let r = 0; r < rows; r++) { let s = 0; for (let c = 0; c < cols; c++) s += f[r * cols + c]! * f[xo + c]!; md = Math.max(md, Math.abs(s - f[yo + r]!)); }
console.log('max diff', md);
const t = process.cpuUsage(); for (let i = 0; i < 20000; i++) g.gemv(0, xo * 4, yo * 4, rows, cols); const c = process.cpuUsage(t);
console.log('ns/MAC', ((c.user + c.system) * 1000) / (20000 * rows * cols));

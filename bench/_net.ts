import { SileroNetwork } from '../src/vad/silero-network.js';
const net = new SileroNetwork(8000);
const input = new Float32Array(288).map(() => Math.random() * 0.2 - 0.1);
const st = new Float32Array(256);
for (let i = 0; i < 2000; i++) net.run(input, 0, st, 0, 128);
const t = process.cpuUsage(); const N = 20000;
for (let i = 0; i < N; i++) net.run(input, 0, st, 0, 128);
const c = process.cpuUsage(t);
console.log('cpu µs/window', (c.user + c.system) / N);

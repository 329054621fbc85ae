import { readFileSync } from 'node:fs';
const ms = process.argv.slice(2);
for (const m of ms) if (m !== 'none') await import(m.startsWith('.') ? new URL(m, `file://${process.cwd()}/`).href : m);
await new Promise((r) => setTimeout(r, 200));
globalThis.gc(); 
await new Promise((r) => setTimeout(r, 200));
const t = readFileSync('/proc/self/status', 'utf8');
const mu = process.memoryUsage();
console.log(ms.join('+').padEnd(50), (Number(t.match(/VmRSS:\s+(\d+)/)[1]) / 1024).toFixed(1), 'MB rss; heapUsed', (mu.heapUsed / 1048576).toFixed(1), 'heapTotal', (mu.heapTotal / 1048576).toFixed(1), 'ext', (mu.external/1048576).toFixed(1));

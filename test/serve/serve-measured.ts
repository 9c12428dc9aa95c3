/**
 * `webgrpo serve` (the real CLI, the real ONNX loader) that reports its own memory: each line on
 * stdin runs a full garbage collection and prints `memory <heapUsed> <rss>` on stdout, so a test
 * reads what the server retains rather than garbage not yet collected. Needs --expose-gc.
 * Usage: tsx test/serve/serve-measured.ts [serve options...]
 */
import { createInterface } from 'node:readline';
import { run } from '../../lib/cli/serve.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('serve-measured needs node --expose-gc (in NODE_OPTIONS).');
createInterface({ input: process.stdin }).on('line', () => {
  gc();
  const { heapUsed, rss } = process.memoryUsage();
  process.stdout.write(`memory ${heapUsed} ${rss}\n`);
});
process.exit(await run(process.argv.slice(2)));

/**
 * Whether creating and releasing an onnxruntime-node session leaks: the same graph file's session
 * created and released `cycles` times in one process, the resident memory after each release
 * (and the peak) printed as one JSON line. Run it under different glibc allocator settings
 * (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_) to tell a leak from pages the allocator keeps.
 *
 *   tsx scripts/bench/_session-cycles.ts <model.onnx> [cycles] [arena: 1|0]
 */
import * as ort from 'onnxruntime-node';

async function main(): Promise<void> {
  const [path, cyclesArg, arenaArg] = process.argv.slice(2);
  if (!path) throw new Error('usage: _session-cycles.ts <model.onnx> [cycles] [arena: 1|0]');
  const cycles = Number(cyclesArg ?? 10);
  const mb = (bytes: number) => Math.round(bytes / 1e6);
  const afterRelease: number[] = [];
  const whileHeld: number[] = [];
  for (let i = 0; i < cycles; i++) {
    const session = await ort.InferenceSession.create(path, { executionProviders: ['cpu'], enableCpuMemArena: arenaArg !== '0', logSeverityLevel: 3 });
    whileHeld.push(mb(process.memoryUsage().rss));
    await session.release();
    afterRelease.push(mb(process.memoryUsage().rss));
  }
  const peak = mb(process.resourceUsage().maxRSS * 1024);
  console.log(JSON.stringify({ cycles, arena: arenaArg !== '0', env: { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX ?? null, MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? null }, whileHeld, afterRelease, peak }));
}

void main();

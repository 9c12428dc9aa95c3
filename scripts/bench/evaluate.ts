/**
 * Held-out evaluation throughput on the bundled model (Node, CPU): `evaluate` with its default
 * batching (8 items decoded together through `generateGroups`) against one item at a time (the
 * obvious loop), and against the bare `generateGroups` calls it makes (what scoring, verdicts and
 * aggregation add). Wall and CPU time: the machine is shared, CPU time is the steadier measure.
 */
import { performance } from 'node:perf_hooks';
import { arithmetic, evaluate, generateGroups, type DatasetItem } from '../../lib/index.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { deriveSeed } from '../../lib/run/random.js';
import { ms } from './_measure.js';

const ITEMS = 32;
const SAMPLES = 4;
const TOKENS = 16;
const ROUNDS = 3;

interface Timing {
  wallMs: number;
  cpuMs: number;
  tokens: number;
}

/** The median round of `fn` by wall time (after one warm-up round). */
async function timed(fn: () => Promise<number>): Promise<Timing> {
  await fn();
  const rounds: Timing[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    const tokens = await fn();
    const wallMs = performance.now() - t0;
    const used = process.cpuUsage(cpu);
    rounds.push({ wallMs, cpuMs: (used.user + used.system) / 1000, tokens });
  }
  rounds.sort((a, b) => a.wallMs - b.wallMs);
  return rounds[Math.floor(rounds.length / 2)];
}

export async function run(): Promise<string> {
  const model = await bundledModelPath();
  const policy = await loadOnnxPolicy({ model });
  try {
    const dataset = arithmetic.dataset({ size: ITEMS, seed: 77 });
    const options = { policy, dataset, rewards: arithmetic.rewards, samples: SAMPLES, maxNewTokens: TOKENS, seed: 1 };
    console.log('  evaluate, 8 items per generateGroups call…');
    const batched = await timed(async () => (await evaluate(options)).summary.usage.completionTokens);
    console.log('  evaluate, one item at a time…');
    const single = await timed(async () => (await evaluate({ ...options, batchSize: 1 })).summary.usage.completionTokens);
    console.log('  the bare generateGroups calls…');
    const bare = await timed(() => bareGroups(policy, dataset));
    return report(batched, single, bare);
  } finally {
    await policy.dispose();
  }
}

/** The sampling `evaluate` does, without scoring: the same requests (8 items per call, the same seeds). */
async function bareGroups(policy: OnnxPolicy, dataset: DatasetItem[]): Promise<number> {
  let tokens = 0;
  for (let start = 0; start < dataset.length; start += 8) {
    const requests = dataset.slice(start, start + 8).map((item, i) => ({ messages: item.messages, groupSize: SAMPLES, maxNewTokens: TOKENS, temperature: 1, seed: deriveSeed(1, 'evaluate', start + i) }));
    for (const group of await generateGroups(policy, requests)) tokens += group.usage.completionTokens;
  }
  return tokens;
}

function report(batched: Timing, single: Timing, bare: Timing): string {
  const row = (name: string, t: Timing) =>
    `| ${name} | ${ms(t.wallMs)} | ${ms(t.cpuMs)} | ${((ITEMS * 1000) / t.wallMs).toFixed(1)} | ${((ITEMS * SAMPLES * 1000) / t.wallMs).toFixed(1)} | ${((t.tokens * 1000) / t.wallMs).toFixed(0)} |`;
  return [
    '## Held-out evaluation (`evaluate`)',
    '',
    `The bundled \`webgrpo-tiny\` in Node (onnxruntime-node, CPU): ${ITEMS} arithmetic prompts, ${SAMPLES} samples each at temperature 1, at most ${TOKENS} new tokens, every sample scored by the task's three rewards. Median of ${ROUNDS} rounds after a warm-up.`,
    '',
    '| | wall ms | CPU ms | items/s | samples/s | tokens/s |',
    '|---|---:|---:|---:|---:|---:|',
    row('`evaluate` (8 items per `generateGroups` call, the default)', batched),
    row('`evaluate({ batchSize: 1 })` (one item at a time)', single),
    row('bare `generateGroups`, 8 items per call (no scoring)', bare),
    '',
    `Batching 8 items is **${(single.wallMs / batched.wallMs).toFixed(2)}x** faster than one item at a time (CPU time ${(single.cpuMs / batched.cpuMs).toFixed(2)}x less). ` +
      `Scoring, verdicts and aggregation cost **${(((batched.wallMs - bare.wallMs) / bare.wallMs) * 100).toFixed(1)}%** over the bare sampling (wall; the rewards are string checks).`,
  ].join('\n');
}

/**
 * Held-out evaluation throughput on the bundled model (Node, CPU): `evaluate` with its default
 * batching (8 items decoded together through `generateGroups`) against one item at a time (the
 * obvious loop), and against the bare `generateGroups` calls it makes; and evaluate's own work
 * (scoring, verdicts, aggregation) alone, with a policy that answers at once. Wall and CPU time:
 * the machine is shared, so the rounds of the variants alternate.
 */
import { performance } from 'node:perf_hooks';
import { evaluate, type DatasetItem, type GenerateGroupOptions, type Policy } from '../../lib/index.js';
import { arithmetic } from '../../lib/tasks/index.js';
import { generateGroups } from '../../lib/method.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';
import { deriveSeed } from '../../lib/run/random.js';
import { ms } from './_measure.js';

const ITEMS = 32;
const SAMPLES = 4;
const TOKENS = 16;
const ROUNDS = 7;

interface Timing {
  wallMs: number;
  cpuMs: number;
  tokens: number;
}

/**
 * The median round of each variant by wall time, after one warm-up round of each; the rounds of
 * the variants alternate, so load from the rest of the machine falls on all of them alike.
 */
async function timedTogether(variants: Array<() => Promise<number>>): Promise<Timing[]> {
  for (const fn of variants) await fn();
  const rounds: Timing[][] = variants.map(() => []);
  for (let i = 0; i < ROUNDS; i++) {
    for (const [v, fn] of variants.entries()) {
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      const tokens = await fn();
      const wallMs = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      rounds[v].push({ wallMs, cpuMs: (used.user + used.system) / 1000, tokens });
    }
  }
  return rounds.map((r) => r.sort((a, b) => a.wallMs - b.wallMs)[Math.floor(r.length / 2)]);
}

export async function run(): Promise<string> {
  const model = await bundledModelPath();
  const policy = await loadOnnxPolicy({ model });
  try {
    const dataset = arithmetic.dataset({ size: ITEMS, seed: 77 });
    const options = { policy, dataset, rewards: arithmetic.rewards, samples: SAMPLES, maxNewTokens: TOKENS, seed: 1 };
    console.log('  evaluate batched, one item at a time, and the bare generateGroups calls, alternating…');
    const [batched, single, bare] = await timedTogether([
      async () => (await evaluate(options)).summary.usage.completionTokens,
      async () => (await evaluate({ ...options, batchSize: 1 })).summary.usage.completionTokens,
      () => bareGroups(policy, dataset),
    ]);
    const own = await ownWorkMs(dataset);
    return report(batched, single, bare, own);
  } finally {
    await policy.dispose();
  }
}

/** Milliseconds of one `evaluate` of the same shape with a policy that answers at once: its own work. */
async function ownWorkMs(dataset: DatasetItem[]): Promise<number> {
  const instant: Policy = {
    info: { model: 'instant', backend: 'test' },
    async generateGroup(o: GenerateGroupOptions) {
      const completions = Array.from({ length: o.groupSize }, () => ({ text: '42', tokenIds: [52, 50], logprobs: [-1, -1], finishReason: 'eos' as const }));
      return { promptTokenIds: [1], completions, usage: { promptTokens: 1, completionTokens: 2 * o.groupSize } };
    },
    async dispose() {},
  };
  const once = () => evaluate({ policy: instant, dataset, rewards: arithmetic.rewards, samples: SAMPLES });
  for (let i = 0; i < 5; i++) await once();
  const runs = 50;
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await once();
  return (performance.now() - t0) / runs;
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

const pct = (x: number, base: number): string => `${x >= base ? '+' : '−'}${Math.abs(((x - base) / base) * 100).toFixed(1)}%`;

function report(batched: Timing, single: Timing, bare: Timing, ownMs: number): string {
  const row = (name: string, t: Timing) =>
    `| ${name} | ${ms(t.wallMs)} | ${ms(t.cpuMs)} | ${((ITEMS * 1000) / t.wallMs).toFixed(1)} | ${((ITEMS * SAMPLES * 1000) / t.wallMs).toFixed(1)} | ${((t.tokens * 1000) / t.wallMs).toFixed(0)} |`;
  return [
    '## Held-out evaluation (`evaluate`)',
    '',
    `The bundled \`webgrpo-tiny\` in Node (onnxruntime-node, CPU): ${ITEMS} arithmetic prompts, ${SAMPLES} samples each at temperature 1, at most ${TOKENS} new tokens, every sample scored by the task's three rewards. Median of ${ROUNDS} rounds of each after a warm-up, the three alternating.`,
    '',
    '| | wall ms | CPU ms | items/s | samples/s | tokens/s |',
    '|---|---:|---:|---:|---:|---:|',
    row('`evaluate` (8 items per `generateGroups` call, the default)', batched),
    row('`evaluate({ batchSize: 1 })` (one item at a time)', single),
    row('bare `generateGroups`, 8 items per call (no scoring)', bare),
    '',
    `Batching 8 items is **${(single.wallMs / batched.wallMs).toFixed(2)}x** faster than one item at a time (CPU time ${(single.cpuMs / batched.cpuMs).toFixed(2)}x less). ` +
      `Its own work (scoring with the three rewards, verdicts, aggregation), timed with a policy that answers at once, is **${ms(ownMs)} ms** of the ${ms(batched.wallMs)} ms: ` +
      `the rest is sampling, which the bare \`generateGroups\` calls of the same requests (same seeds, same tokens) take on their own (${pct(bare.wallMs, batched.wallMs)} wall, ${pct(bare.cpuMs, batched.cpuMs)} CPU time against \`evaluate\`, on a machine shared with other work: its load is in the stamp).`,
  ].join('\n');
}

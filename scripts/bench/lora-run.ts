/**
 * The `lora` method's steps as the driver runs them, beside the `gradient` method (head adapter)
 * on the same dataset, groups and sampling: per step the sampling (every item's group), the
 * update (GrpoTrainer over the LoRA training graphs or the head graphs) and, for LoRA, the
 * refresh that makes the next step sample from the updated adapter (A and B handed to the
 * sampler as graph inputs: the step's `refreshMs`). Phases are cut at the run's events; medians over the steps after the
 * first (which warms the JIT). Node CPU, the bundled model and the bench model.
 */
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { gradientGrpo, loraGrpo } from '../../lib/grad.js';
import { MemoryStore } from '../../lib/index.js';
import { digits } from '../../lib/tasks/index.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import { BENCH, buildModel, MODEL_DIRS } from '../build-model/index.js';

const TINY_DIR = fileURLToPath(new URL('../../public/models/webgrpo-tiny', import.meta.url));
const SHAPE = { groupSize: 8, batchSize: 2, maxNewTokens: 8, epochs: 1, seed: 1 };

interface Phases {
  sampleMs: number;
  trainMs: number;
  refreshMs: number;
  stepMs: number;
  /** Process CPU time of the whole step (user + system, all threads). */
  cpuMs: number;
  tokens: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Runs `steps` steps and cuts each at its events: step-start, the last rewards, the train event, step-end. */
async function phases(run: AsyncIterable<{ type: string }>): Promise<Phases[]> {
  const out: Phases[] = [];
  let start = 0;
  let cpu = process.cpuUsage();
  let sampled = 0;
  let trained = 0;
  for await (const raw of run) {
    const event = raw as { type: string; [key: string]: unknown };
    const now = performance.now();
    if (event.type === 'step-start') {
      start = now;
      cpu = process.cpuUsage();
    }
    if (event.type === 'rewards') sampled = now;
    if (event.type === 'train') trained = now;
    if (event.type === 'step-end') {
      const c = process.cpuUsage(cpu);
      const training = event.training as Array<{ tokens: number }>;
      const refreshMs = typeof event.refreshMs === 'number' ? event.refreshMs : 0;
      out.push({ sampleMs: sampled - start, trainMs: trained - sampled, refreshMs, stepMs: now - start, cpuMs: (c.user + c.system) / 1000, tokens: training[0].tokens });
    }
  }
  return out;
}

function summary(rows: Phases[]): Phases {
  const later = rows.length > 1 ? rows.slice(1) : rows;
  const pick = (key: keyof Phases) => median(later.map((r) => r[key]));
  return { sampleMs: pick('sampleMs'), trainMs: pick('trainMs'), refreshMs: pick('refreshMs'), stepMs: pick('stepMs'), cpuMs: pick('cpuMs'), tokens: pick('tokens') };
}

async function measureModel(dir: string, steps: number, rank: number): Promise<{ lora: Phases; head: Phases }> {
  const dataset = digits.dataset({ size: SHAPE.batchSize * steps, seed: 3 });
  const policy = await loadOnnxPolicy({ model: dir });
  const lora = summary(await phases(loraGrpo({ ...SHAPE, policy, dataset, rewards: digits.rewards, lora: { r: rank }, store: new MemoryStore() })));
  await policy.dispose();
  const hidden = await loadOnnxPolicy({ model: dir, hiddenState: true });
  const run = gradientGrpo({ ...SHAPE, policy: hidden, dataset, rewards: digits.rewards, head: { rank }, store: new MemoryStore() });
  const head = summary(await phases(run));
  (await run.result()).trainer.dispose();
  await hidden.dispose();
  return { lora, head };
}

export async function run(): Promise<string> {
  console.log('  bundled model: lora and gradient runs…');
  const tiny = await measureModel(TINY_DIR, 5, 8);
  console.log('  building the bench model (npm run build:model -- --size bench)…');
  await buildModel(BENCH, MODEL_DIRS.bench);
  console.log('  bench model: lora and gradient runs…');
  const bench = await measureModel(MODEL_DIRS.bench, 3, 8);

  const f = (x: number) => x.toFixed(0);
  const row = (model: string, method: string, p: Phases, head?: Phases) =>
    `| ${model} | ${method} | ${p.tokens} | ${f(p.sampleMs)} | ${f(p.trainMs)} | ${method === 'lora' ? f(p.refreshMs) : '-'} | ${f(p.stepMs)} | ${f(p.cpuMs)} | ${head ? (p.stepMs / head.stepMs).toFixed(2) : '1.00'} | ${method === 'lora' ? ((100 * p.refreshMs) / p.stepMs).toFixed(0) + '%' : '-'} |`;
  return `## lora-run: the lora method's step, beside the gradient method's

Per driver step on Node CPU: ${SHAPE.batchSize} items x ${SHAPE.groupSize} completions of up to ${SHAPE.maxNewTokens} tokens (digits task), one update per step; LoRA rank 8 on all seven projections of every layer, the head adapter rank 8. Phases cut at the run's events (sampling: step-start to the last rewards; update: to the train event; refresh: the step's \`refreshMs\`, handing the updated A and B to the sampler as graph inputs), wall ms, medians over the steps after the first; CPU ms of the whole step beside it.

| model | method | tokens trained | sampling ms | update ms | refresh ms | step ms | step CPU ms | step x gradient | refresh share of step |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|
${row('bundled (0.8M)', 'gradient', tiny.head)}
${row('bundled (0.8M)', 'lora', tiny.lora, tiny.head)}
${row('bench (28M)', 'gradient', bench.head)}
${row('bench (28M)', 'lora', bench.lora, bench.head)}

Both methods train on onnxruntime's graphs (the LoRA training graphs, the head graphs). When this suite last ran the lora method on the removed TypeScript engine (2026-12-01), its bench-model step took 122687 ms (118694 ms of update, 26.59x the gradient method's step) and the merge-and-new-session refresh 2174 ms.`;
}

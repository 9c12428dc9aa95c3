/**
 * A pretraining update of the skill model (scripts/pretrain: 0.42M parameters, a batch of 32
 * corpus examples) on the full-parameter graph engine (lib/train/full-engine.ts, onnxruntime's
 * kernels) on one and two threads, in CPU time (user + system of every thread of the process) and
 * wall time; then a short phase-1 run of `pretrain` on the graph engine, timed, and phase 1
 * projected from it against the 48 minutes the shipped model's phase 1 took on the TypeScript
 * engine (its training.json; that engine is removed, its last measured update is quoted).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { clipFactor, resolveOptimizer } from '../../lib/train/optimizer.js';
import { decoderParameterCount } from '../../lib/train/graph/lora-graph.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { vocabulary } from '../build-model/tokenizer.js';
import { initWeights } from '../build-model/weights.js';
import { CONTINUE, PRETRAIN, SKILL_SPEC } from '../pretrain/config.js';
import { buildContinuationCorpus } from '../pretrain/corpus-continue.js';
import { buildCorpus, type Example } from '../pretrain/corpus.js';
import { pretrain, pretrainEngine, supervisedLoss } from '../pretrain/train.js';
import { toDecoder } from '../pretrain/weights.js';
import { measureCpu, ms, type Cost } from './_measure.js';

const SHORT_RUN = 200;
const SHORT_PHASE2 = 40;

const fresh = (): DecoderWeights => toDecoder(SKILL_SPEC, initWeights(SKILL_SPEC, vocabulary(SKILL_SPEC.reservedTokens).length));
const optimizer = resolveOptimizer({ lr: PRETRAIN.lr, weightDecay: PRETRAIN.weightDecay, maxGradNorm: PRETRAIN.maxGradNorm });

/**
 * The TypeScript engine's update (lib/lora/full-grad.ts, one example at a time, single-threaded)
 * as this suite last measured it on 2026-12-02, before the engine was removed: wall and CPU ms.
 */
const TYPESCRIPT_UPDATE = { ms: 1587, cpuMs: 1461 };

export async function run(): Promise<string> {
  const corpus = buildCorpus(PRETRAIN.batch * 8, PRETRAIN.seed, PRETRAIN.wrongShare);
  const batches = Array.from({ length: 8 }, (_, s) => corpus.slice(s * PRETRAIN.batch, (s + 1) * PRETRAIN.batch));
  const rowsOf = (batch: readonly Example[]) => batch.reduce((n, e) => n + e.promptIds.length + e.replyIds.length, 0);
  const rows = rowsOf(batches[0]);
  let next = 0;

  const results: Array<{ threads: number; cost: Cost; buildMs: number }> = [];
  for (const threads of [1, 2]) {
    console.log(`  graph engine, ${threads} thread(s)…`);
    const weights = fresh();
    const t0 = performance.now();
    const engine = await pretrainEngine(weights, threads);
    const buildMs = performance.now() - t0;
    const step = async () => {
      const batch = batches[next++ % batches.length];
      const stats = await engine.forward(batch.map((e) => ({ prompt: e.promptIds, completions: [e.replyIds] })), { temperature: 1, reference: false });
      const { dLogp } = supervisedLoss(batch, stats.logps);
      const norm = await engine.backward(dLogp, new Float64Array(dLogp.length));
      await engine.step(optimizer, clipFactor(norm, optimizer.maxGradNorm));
    };
    await step();
    next = 0;
    results.push({ threads, cost: await measureCpu(step, 7), buildMs });
    engine.dispose();
  }

  console.log(`  a ${SHORT_RUN}-update phase-1 run on the graph engine (${PRETRAIN.workers} threads)…`);
  const runCorpus = buildCorpus(SHORT_RUN * PRETRAIN.batch, PRETRAIN.seed, PRETRAIN.wrongShare);
  const losses: Array<{ step: number; loss: number }> = [];
  const short = await pretrain(fresh(), runCorpus, { ...PRETRAIN, steps: SHORT_RUN }, (log) => losses.push({ step: log.step, loss: log.loss }));

  console.log(`  a ${SHORT_PHASE2}-update phase-2 run…`);
  const phase2 = await pretrain(fresh(), buildContinuationCorpus(CONTINUE), { ...CONTINUE, steps: SHORT_PHASE2 }, () => undefined);

  const root = fileURLToPath(new URL('../..', import.meta.url));
  const shipped = JSON.parse(await readFile(join(root, 'public/models/webgrpo-skill/training.json'), 'utf8')) as { config: { steps: number }; trained: { seconds: number; rows: number; workers: number }; continued: { steps: number }; phase2: { seconds: number; rows: number } };
  const baseline = shipped.trained;
  const projected = (short.seconds / SHORT_RUN) * shipped.config.steps;
  const best = results.reduce((a, b) => (b.cost.ms < a.cost.ms ? b : a));
  const x = (a: number, b: number) => (a / b).toFixed(2);
  const row = (name: string, c: Cost) => `| ${name} | ${ms(c.ms)} | ${ms(c.cpuMs)} | ${(rows / (c.ms / 1000)).toFixed(0)} | ${x(c.cpuMs, best.cost.cpuMs)} |`;
  return [
    '## pretrain-graph: a pretraining update on the full-parameter graph engine',
    '',
    `The skill model (${(decoderParameterCount(fresh()) / 1e6).toFixed(2)}M parameters: hidden ${SKILL_SPEC.hiddenSize}, ${SKILL_SPEC.numLayers} layers, ${SKILL_SPEC.numHeads} heads / ${SKILL_SPEC.numKvHeads} kv heads, tied head), ` +
      `one update of a batch of ${PRETRAIN.batch} phase-1 corpus examples (${rows} decoder rows): forward, the reply tokens' mean negative log-likelihood, the backward to every weight, AdamW over every weight. ` +
      'The graph engine runs the batch as a few forward and backward graph runs (a row per example, examples of similar length together) on onnxruntime-node. ' +
      'CPU time is user + system of every thread of the process, the median of 7 updates; the machine is shared, so wall time measures the neighbours too.',
    '',
    '| | wall ms | CPU ms | rows/s (wall) | CPU x best graph |',
    '|---|---:|---:|---:|---:|',
    ...results.map((r) => row(`graph engine, onnxruntime ${r.threads} thread${r.threads > 1 ? 's' : ''}`, r.cost)),
    '',
    `Building the graphs and sessions once: ${ms(results[0].buildMs)} ms wall. The TypeScript engine it replaced (lib/lora/full-grad.ts, one example at a time, single-threaded; removed with the other TypeScript and WGSL training kernels) took ${TYPESCRIPT_UPDATE.cpuMs} CPU ms (${TYPESCRIPT_UPDATE.ms} ms wall) per update when this suite last measured it (2026-12-02): ${x(TYPESCRIPT_UPDATE.cpuMs, best.cost.cpuMs)}x the graph engine's CPU time now (recorded against measured, not one run).`,
    '',
    `**Phase 1 on the graph engine.** A ${SHORT_RUN}-update run of \`pretrain\` (scripts/pretrain/train.ts, ${PRETRAIN.workers} onnxruntime thread${PRETRAIN.workers > 1 ? 's' : ''}, the phase-1 recipe and corpus) took ${short.seconds.toFixed(1)} s wall ` +
      `(${(short.rows / short.seconds).toFixed(0)} rows/s; mean loss ${losses.map((l) => `${l.loss.toFixed(3)} at ${l.step}`).join(', ')}). ` +
      `Phase 1's ${shipped.config.steps} updates at that pace: ${(projected / 60).toFixed(1)} minutes, against the ${(baseline.seconds / 60).toFixed(0)} minutes (${(baseline.rows / baseline.seconds).toFixed(0)} rows/s) the shipped model's phase 1 took on the TypeScript engine with ${baseline.workers} worker threads on this machine (its training.json): ` +
      `**${x(baseline.seconds, projected)}x faster**.`,
    '',
    `**Phase 2** (the continuation corpus: worked examples in the prompt, rows of 30 to 450 tokens): a ${SHORT_PHASE2}-update run took ${phase2.seconds.toFixed(1)} s wall (${(phase2.rows / phase2.seconds).toFixed(0)} rows/s); ` +
      `its ${shipped.continued.steps} updates at that pace: ${((phase2.seconds / SHORT_PHASE2) * shipped.continued.steps / 60).toFixed(1)} minutes, against the ${(shipped.phase2.seconds / 60).toFixed(0)} minutes (${(shipped.phase2.rows / shipped.phase2.seconds).toFixed(0)} rows/s) of the shipped model's phase 2 on the TypeScript engine: ` +
      `${x(shipped.phase2.seconds, (phase2.seconds / SHORT_PHASE2) * shipped.continued.steps)}x faster.`,
  ].join('\n');
}

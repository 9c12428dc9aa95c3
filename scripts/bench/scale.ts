/**
 * LoRA GRPO at the size of the hub models users bring: random-weight models in the exact shapes of
 * SmolLM2-135M-Instruct (fp32) and Qwen2.5-0.5B-Instruct (4-bit MatMulNBits, q/k/v biases, a
 * 151,936-token vocabulary), built on demand (gitignored). For each group shape, in a Node process
 * of its own (so its peak resident memory is its own): load, one sampled group, a scoring pass of
 * it, and three LoRA steps (rank 8 on all seven projections of every layer) through GrpoTrainer on
 * loraEngine, against the same process's scoring pass, in CPU time; beside the memory estimate
 * the engine sized itself with, and the whole-decoder graphs this engine replaced as this
 * project measured them.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ms } from './_measure.js';

const run_ = promisify(execFile);

interface Measured {
  shape: string;
  dtype: string;
  G: number;
  T: number;
  promptTokens: number;
  sampled: number;
  modelBytes: number;
  loadMs: number;
  sampleMs: number;
  scoreMs: number;
  buildMs: number;
  steps: number[];
  stepWall: number[];
  drift: number;
  peakRss: number;
  memory: Array<{ phase: string; rss: number; peak: number }>;
  estimate: { total: number; recompute: boolean; activations: number };
}

const CONFIGS: Array<[shape: string, dtype: 'fp32' | 'q4', group: number, tokens: number]> = [
  ['smollm2-135m', 'fp32', 4, 64],
  ['smollm2-135m', 'fp32', 8, 128],
  ['qwen2.5-0.5b', 'q4', 4, 64],
];

/** The whole-decoder LoRA graphs (one forward and one backward graph of every layer, activations all kept) as measured at SmolLM2-135M's shape, fp32, Node 20 on this machine class's 2 cores, before this engine replaced them. */
const WHOLE_GRAPH = [
  { group: '4 x 32', stepOverScore: '2.3-3.2', firstStepMs: 20700, peakGb: 5.0 },
  { group: '8 x 128', stepOverScore: '8.2', firstStepMs: 60000, peakGb: 11.7 },
];

async function measure(shape: string, dtype: string, group: number, tokens: number): Promise<Measured> {
  const { stdout } = await run_('npx', ['tsx', 'scripts/bench/_scale-step.ts', shape, dtype, String(group), String(tokens)], { maxBuffer: 1 << 24 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Measured;
}

export async function run(): Promise<string> {
  const rows: Measured[] = [];
  for (const [shape, dtype, group, tokens] of CONFIGS) {
    console.log(`  ${shape} ${dtype}, ${group} x ${tokens}…`);
    rows.push(await measure(shape, dtype, group, tokens));
  }
  const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return [
    '## scale: LoRA GRPO on hub-sized models (Node)',
    '',
    'Random weights in the exact shapes of SmolLM2-135M-Instruct (30 layers, hidden 576, 9 / 3 heads, vocabulary 49,152, tied: 134.5M parameters; fp32) and Qwen2.5-0.5B-Instruct (24 layers, hidden 896, 14 / 2 heads, q/k/v biases, vocabulary 151,936; projections 4-bit MatMulNBits, `model_q4.onnx`), Optimum tensor names, loaded through `loadOnnxPolicy`. ' +
      'One group of G completions x T new tokens after a ' + `${rows[0].promptTokens}-token prompt (no end token: every completion is T long). ` +
      'LoRA rank 8 on all seven projections of every layer, `GrpoTrainer` over `loraEngine` (beta 0), default engine settings: activations kept up to 512 MiB, else recomputed. ' +
      'Times are CPU time (user + system of every thread) except load; step is the median of steps 2-3; step x scoring divides by the same process\'s scoring pass of the same tokens. Peak RSS is the process\'s, sampler session included.',
    '',
    '| model | G x T | file MB | load s | sampling tok/s (CPU) | scoring CPU ms | first step CPU ms | step CPU ms | step x scoring | activations | engine estimate MB | peak RSS MB | adapter-off log-prob drift |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|',
    ...rows.map((r) => {
      const step = median(r.steps.slice(1));
      return `| ${r.shape} ${r.dtype} | ${r.G} x ${r.T} | ${mb(r.modelBytes)} | ${(r.loadMs / 1000).toFixed(1)} | ${((r.sampled / r.sampleMs) * 1000).toFixed(0)} | ${ms(r.scoreMs)} | ${ms(r.steps[0])} | ${ms(step)} | ${(step / r.scoreMs).toFixed(2)} | ${r.estimate.recompute ? 'recomputed' : 'kept'} | ${mb(r.estimate.total)} | ${mb(r.peakRss)} | ${r.drift.toExponential(1)} |`;
    }),
    '',
    'The graphs build in ' + rows.map((r) => `${ms(r.buildMs)}`).join(', ') + ' ms (wall, one per row): the layers of one structure share one small graph and its session, so there is no warm-up to speak of. ' +
      'The drift column is the largest difference between the engine\'s log-probs with B = 0 and the scoring pass\'s of the same tokens.',
    '',
    'The whole-decoder graphs this engine replaced, at SmolLM2-135M\'s shape, fp32, recorded (not re-run): ' +
      WHOLE_GRAPH.map((w) => `${w.group}: step ${w.stepOverScore}x a scoring pass, first step ${(w.firstStepMs / 1000).toFixed(1)} s, peak RSS ${w.peakGb} GB`).join('; ') + '.',
    '',
    'Where the bytes go, measured: the process\'s resident memory after each phase (MB; peak so far in brackets).',
    '',
    `| phase | ${rows.map((r) => `${r.shape} ${r.dtype} ${r.G} x ${r.T}`).join(' | ')} |`,
    `|---|${rows.map(() => '---:').join('|')}|`,
    ...rows[0].memory.map((m, i) => `| ${m.phase} | ${rows.map((r) => `${mb(r.memory[i].rss)} (${mb(r.memory[i].peak)})`).join(' | ')} |`),
    '',
    'The engine\'s own share (its estimate, `estimateStepMemory`): the frozen weights as it holds them (fp32, or q4 packed), the adapter with its gradient and both AdamW moments, each layer\'s input kept between the passes, every layer\'s activations when kept, the widest layer run, and one head chunk of 16 MB of logits (x 4 for log-softmax, probabilities and their gradient). ' +
      'Loading the policy is the sampler\'s onnxruntime session (the weights, their MatMul prepacking, and a transposed copy of a tied embedding for the head), transformers.js and the tokenizer; sampling and scoring grow its arena by the logits of a scoring window. ' +
      'Reading the weights reads the graph\'s structure whole and each weight into an array of its own, which the engine uses as it is (no copy of the file beside them, nothing left for the garbage collector). ' +
      'The steps add the engine\'s onnxruntime arenas, one per layer graph session, each as large as its graph\'s largest run (the head\'s two sessions run without one).',
  ].join('\n');
}

/**
 * Group sampling at SmolLM2-135M-Instruct's shape (random weights, fp32, built on demand into a
 * gitignored folder): webgrpo's `generateGroup` against transformers.js `generate()` + a scoring
 * pass on the same folder in one Node process, taking turns (the onnx bench's child, at 28M
 * there), in CPU time and wall time; then where `generateGroup`'s own time goes (_sample-profile.ts).
 * Each side runs twice: with its own session options (webgrpo's blocking threads, transformers.js'
 * onnxruntime defaults) and with the other's, so webgrpo's lead and the setting's show apart.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildModel, MODEL_FILES } from '../build-model/index.js';
import { samplerSessionOptions } from '../../lib/policy/onnx/session-options.js';
import { hubShapeSpec } from './_hub-shapes.js';
import { ms } from './_measure.js';
import type { BenchCase, Measurement } from './_onnx-measure.js';

const exec = promisify(execFile);
const SHAPE = 'smollm2-135m';
const G = 8;
const PROMPT = 260;
const NEW = 64;
const RUNS = 3;

interface Profile {
  total: Timed;
  timers: Record<string, Timed>;
  gcWallMs: number;
  tokens: number;
  promptTokens: number;
  decodeStep: Record<'spinning' | 'notSpinning', Record<string, { cpuMs: number; wallMs: number }>>;
  /** Bytes of one decode step's present.* outputs at the longer cache length. */
  presentBytes: number;
}

interface Timed {
  n: number;
  wallMs: number;
  cpuMs: number;
}

async function child(script: string, args: string[]): Promise<unknown> {
  const { stdout } = await exec(process.execPath, ['node_modules/tsx/dist/cli.mjs', `scripts/bench/${script}`, ...args], { maxBuffer: 1 << 24 });
  return JSON.parse(stdout.trim().split('\n').pop()!);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function run(): Promise<string> {
  const { spec, dir } = await hubShapeSpec(SHAPE, 'fp32');
  if (!existsSync(join(dir, MODEL_FILES.fp32))) await buildModel(spec, dir);
  const cases: BenchCase[] = Array.from({ length: RUNS }, () => ({ groupSize: G, newTokens: NEW, seed: 1 }));
  console.log(`  ${SHAPE}: webgrpo and transformers.js taking turns, ${RUNS} groups each…`);
  // webgrpo's sampler options in Node, and onnxruntime's default (spinning) given explicitly.
  const blocking = samplerSessionOptions(true);
  const spinning = { extra: { 'session.intra_op.allow_spinning': '1' } };
  const sides = [
    { name: 'webgrpo', implementation: 'webgrpo' },
    { name: 'transformers.js', implementation: 'transformers.js' },
    { name: 'transformers.js blocking', implementation: 'transformers.js', sessionOptions: blocking },
    { name: 'webgrpo spinning', implementation: 'webgrpo', sessionOptions: spinning },
  ];
  const timing = (await child('_onnx-node.ts', ['timing', 'sides', dir, JSON.stringify({ cases, promptTokens: PROMPT, sides })])) as Record<string, Measurement[]>;
  console.log('  where generateGroup spends its time…');
  const profile = (await child('_sample-profile.ts', [dir, String(G), String(PROMPT), String(NEW)])) as Profile;

  const side = (m: Measurement[]) => ({ cpu: median(m.map((x) => x.cpuMs!)), wall: median(m.map((x) => x.totalMs)), prefill: median(m.map((x) => x.prefillMs)), tokens: m[0].tokens, meanLogprob: m[0].meanLogprob });
  const ours = side(timing.webgrpo);
  const theirs = side(timing['transformers.js']);
  const theirsBlocking = side(timing['transformers.js blocking']);
  const oursSpinning = side(timing['webgrpo spinning']);
  const ratio = (a: ReturnType<typeof side>, b: ReturnType<typeof side>) => `${(a.cpu / b.cpu).toFixed(2)}x`;
  const row = (label: string, options: string, s: ReturnType<typeof side>, ...ratios: string[]) =>
    `| ${label} | ${options} | ${s.tokens} | ${ms(s.prefill)} | ${ms(s.wall)} | ${ms(s.cpu)} | ${((s.tokens / s.cpu) * 1000).toFixed(1)} | ${ratios.join(' | ')} |`;
  const { total, timers } = profile;
  const session = (timers['prefill run']?.cpuMs ?? 0) + (timers['decode runs']?.cpuMs ?? 0);
  const forwardOwn = (timers['decoder.forward']?.cpuMs ?? 0) - session;
  const parts: Array<[string, number, number]> = [
    ['onnxruntime: prefill (1 row x prompt)', timers['prefill run']?.cpuMs ?? 0, timers['prefill run']?.n ?? 0],
    ['onnxruntime: decode steps (G rows x 1 token)', timers['decode runs']?.cpuMs ?? 0, timers['decode runs']?.n ?? 0],
    ['webgrpo: draws (softmax, inverse CDF, log-prob) over the vocabulary', timers['draws (softmax, sample, log-prob)']?.cpuMs ?? 0, timers['draws (softmax, sample, log-prob)']?.n ?? 0],
    ['webgrpo: a pass\'s inputs and outputs (ids, mask, positions, cache tensors)', forwardOwn, timers['decoder.forward']?.n ?? 0],
    ['webgrpo: cache gather, merge, dispose', timers['cache gather, merge, dispose']?.cpuMs ?? 0, timers['cache gather, merge, dispose']?.n ?? 0],
  ];
  const listed = parts.reduce((s, [, cpu]) => s + cpu, 0);
  parts.push(['the rest (the batcher, row bookkeeping, stop checks, events)', total.cpuMs - listed, 0]);
  const step = profile.decodeStep;
  const [short, long] = Object.keys(step.spinning);

  return [
    '### scale-sample: group sampling at SmolLM2-135M\'s shape against transformers.js',
    '',
    `Random weights in SmolLM2-135M-Instruct's exact shape, fp32 (the scale bench's folder), one Node process: G = ${G} completions of a ${PROMPT}-token prompt, ${NEW} new tokens, temperature 1, no filters, no end token (every row runs ${NEW} tokens). ` +
      'webgrpo `generateGroup` (the prompt prefilled once, its cache copied to G rows, log-probs returned) against transformers.js `generate()` on G copies of the prompt and a scoring pass over the generated sequences (the log-probs GRPO needs). ' +
      "Each runs with its own defaults and with the other's onnxruntime session options: webgrpo's sampler in Node has onnxruntime's intra-op threads block between ops (`'session.intra_op.allow_spinning': '0'`), transformers.js keeps onnxruntime's default (they spin). " +
      `The four take turns, ${RUNS} groups each after a warm-up; medians. CPU time is the process's (user + system of every thread); the machine is shared, so wall time also counts the neighbours.`,
    '',
    '| implementation | session options | tokens | prefill ms (wall) | total ms (wall) | total CPU ms | tokens per CPU s | CPU ratio to transformers.js (its defaults) | to transformers.js (blocking) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    row('webgrpo `generateGroup`', 'webgrpo\'s default (blocking)', ours, `**${ratio(theirs, ours)}**`, `**${ratio(theirsBlocking, ours)}**`),
    row('webgrpo `generateGroup`', 'spinning', oursSpinning, ratio(theirs, oursSpinning), ratio(theirsBlocking, oursSpinning)),
    row('transformers.js `generate()` + scoring pass', 'its default (spinning)', theirs, '1.00x', ratio(theirsBlocking, theirs)),
    row('transformers.js `generate()` + scoring pass', 'blocking', theirsBlocking, ratio(theirs, theirsBlocking), '1.00x'),
    '',
    `Wall-time ratios: ${(theirs.wall / ours.wall).toFixed(2)}x against transformers.js with its defaults, ${(theirsBlocking.wall / ours.wall).toFixed(2)}x against it blocking. ` +
      `Mean sampled log-prob ${ours.meanLogprob.toFixed(3)} (webgrpo; ${oursSpinning.meanLogprob.toFixed(3)} spinning) and ${theirs.meanLogprob.toFixed(3)} (transformers.js; its own generator draws other tokens).`,
    '',
    `Where one group's time goes in webgrpo (${profile.tokens} tokens after a ${profile.promptTokens}-token prompt; ${ms(total.cpuMs)} CPU ms, ${ms(total.wallMs)} ms wall, of which ${ms(profile.gcWallMs)} ms in garbage-collector pauses):`,
    '',
    '| part | calls | CPU ms | share |',
    '|---|---:|---:|---:|',
    ...parts.map(([label, cpu, n]) => `| ${label} | ${n || ''} | ${ms(cpu)} | ${((cpu / total.cpuMs) * 100).toFixed(1)}% |`),
    '',
    `One decode step of ${G} rows straight on onnxruntime (CPU ms, wall ms in brackets), by cache length and onnxruntime's intra-op thread spinning: ` +
      `${short} positions: ${ms(step.spinning[short].cpuMs)} (${ms(step.spinning[short].wallMs)}) spinning, ${ms(step.notSpinning[short].cpuMs)} (${ms(step.notSpinning[short].wallMs)}) not; ` +
      `${long} positions: ${ms(step.spinning[long].cpuMs)} (${ms(step.spinning[long].wallMs)}) spinning, ${ms(step.notSpinning[long].cpuMs)} (${ms(step.notSpinning[long].wallMs)}) not.`,
    '',
    `What that says: onnxruntime's passes are ${((session / total.cpuMs) * 100).toFixed(0)}% of webgrpo's CPU time and its own code the other ${(100 - (session / total.cpuMs) * 100).toFixed(0)}%, so even at no cost for its own code the ratio would be about ${(theirsBlocking.cpu / (ours.cpu * (session / total.cpuMs))).toFixed(2)}x against transformers.js blocking (${(theirs.cpu / (ours.cpu * (session / total.cpuMs))).toFixed(2)}x against its defaults). ` +
      'transformers.js runs the same decode steps (the same kind of session, G rows, one token each); webgrpo\'s lead at equal settings is the prefill run once instead of G times and the scoring pass it does not need. ' +
      `One decode step costs ${(step.notSpinning[long].cpuMs / step.notSpinning[short].cpuMs).toFixed(1)}x as much at ${long} cache positions as at ${short} (attention over G copies of one prompt, and the export's cache concatenation, which copies the whole cache every step); ` +
      `onnxruntime's thread spinning, its default, costs ${((1 - step.notSpinning[long].cpuMs / step.spinning[long].cpuMs) * 100).toFixed(0)}% of a step's CPU time at ${long} positions here. ` +
      `The garbage collector's pauses come from the cache: each decode step's present.* outputs are new arrays, ${(profile.presentBytes / 1e6).toFixed(0)} MB at ${long} positions, which onnxruntime-node allocates for every output of every run.`,
  ].join('\n');
}

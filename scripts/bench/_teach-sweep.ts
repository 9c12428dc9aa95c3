/**
 * A resumable sweep of the first run's settings (LoRA on sort-words, webgrpo-skill) in Node: each
 * config × seed is one `teachRun`, and its result is written to a JSON file as soon as it ends, so
 * a stopped sweep picks up at the next unfinished run. Usage:
 *   nice -n 10 npx tsx scripts/bench/_teach-sweep.ts out.json 'name:size=1536,lr=0.002,seed=0,heldOut=2027' ...
 * Other keys: group, batch, epochs, iterations, rank, tokens (max new tokens), beta, ent (entropy
 * bonus), epsHigh, lossType (a name), scale (group, batch or none), evalSize, model (a model folder,
 * default webgrpo-skill).
 * Prints each run's held-out greedy and T=1 before/after, its seconds and three greedy replies.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { sortWords } from '../../lib/tasks.js';
import { accuracies, teachRun } from './_teach.js';
import type { LossType } from '../../lib/math/loss-config.js';

const NAMES = new Set(['lossType', 'scale', 'model']);
const [file, ...specs] = process.argv.slice(2);
const done: Record<string, unknown> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
for (const spec of specs) {
  if (spec in done) continue;
  const [, body] = spec.split(':');
  // Numbers, but for the loss type, the advantage scaling and the model folder, which are names.
  const pairs = body.split(',').map((kv) => kv.split('='));
  const o = Object.fromEntries(pairs.filter(([k]) => !NAMES.has(k)).map(([k, v]) => [k, Number(v)]));
  const named = Object.fromEntries(pairs.filter(([k]) => NAMES.has(k)));
  const loss = {
    ...(o.beta !== undefined ? { beta: o.beta } : {}),
    ...(o.ent !== undefined ? { entropyCoeff: o.ent } : {}),
    ...(o.epsHigh !== undefined ? { epsilonHigh: o.epsHigh } : {}),
    ...(named.lossType ? { lossType: named.lossType as LossType, ...(named.lossType === 'dr_grpo' ? { maxCompletionLength: o.tokens ?? 24 } : {}) } : {}),
    ...(named.scale ? { scaleRewards: named.scale as 'group' | 'batch' | 'none' } : {}),
  };
  const h = o.heldOut;
  const r = await teachRun({
    task: sortWords, ...(named.model ? { model: named.model } : {}), seed: o.seed, size: o.size, epochs: o.epochs ?? 1, batchSize: o.batch ?? 16, groupSize: o.group ?? 8, lr: o.lr,
    ...(o.iterations ? { iterations: o.iterations } : {}),
    ...(Object.keys(loss).length ? { loss } : {}),
    ...(o.rank ? { rank: o.rank } : {}),
    ...(o.tokens ? { maxNewTokens: o.tokens } : {}),
    eval: { size: o.evalSize ?? 96, seed: h, samples: 4, samplerSeed: h },
  });
  const [b, a] = [accuracies(r.before), accuracies(r.after)];
  const replies = (rec: typeof r.before) => rec.greedyPass!.items.map((it) => it.samples[0].text);
  const after = replies(r.after);
  const answers = r.heldOut.map((it) => it.answer as string);
  const counts = new Map<string, number>();
  for (const x of after) counts.set(x, (counts.get(x) ?? 0) + 1);
  const row = {
    greedy: [b.greedy, a.greedy], t1: [b.sampled, a.sampled], seconds: r.seconds, steps: r.rewards.length,
    distinctGreedyAfter: new Set(after).size, mostCommonReplyShare: Math.max(...counts.values()) / after.length,
    constant: Math.max(...answers.map((x) => answers.filter((y) => y === x).length)) / answers.length,
    groups: r.groups, rewardsFirst10: r.rewards.slice(0, 10), rewardsLast10: r.rewards.slice(-10),
    examples: r.heldOut.slice(0, 6).map((it, i) => ({ prompt: it.messages![0].content, answer: it.answer, before: replies(r.before)[i], after: after[i] })),
  };
  done[spec] = row;
  writeFileSync(file, JSON.stringify(done, null, 1));
  console.log(spec, `greedy ${(100 * b.greedy).toFixed(1)} -> ${(100 * a.greedy).toFixed(1)}, T=1 ${(100 * b.sampled).toFixed(1)} -> ${(100 * a.sampled).toFixed(1)}, ${r.seconds.toFixed(0)} s, ${row.steps} steps`);
}

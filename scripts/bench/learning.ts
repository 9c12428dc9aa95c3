/**
 * Learning on a prompt-dependent reward, full-depth LoRA against the LM-head adapter, side by side
 * on both bundled models: `webgrpo-skill` (pretrained on the skill tasks) and `webgrpo-tiny`
 * (random weights); the runs are in _first-letter-grpo.ts.
 */
import { BATCH, GROUP, HEAD_LR, LORA_LR, MAX_NEW, MODELS, SEEDS, STEPS, trainHead, trainLora } from './_first-letter-grpo.js';

export async function run(): Promise<string> {
  const rows: string[] = [];
  const examples: string[] = [];
  const summary: string[] = [];
  const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
  for (const model of MODELS) {
    const gains: Record<string, { right: number[]; reward: number[] }> = {};
    for (const seed of SEEDS) {
      for (const [name, train] of [['full-depth LoRA', trainLora], ['head adapter', trainHead]] as const) {
        console.log(`  ${model.name}, ${name}, seed ${seed}…`);
        const { before, after, seconds } = await train(model, seed);
        gains[name] ??= { right: [], reward: [] };
        gains[name].right.push(after.right - before.right);
        gains[name].reward.push(after.reward - before.reward);
        rows.push(`| ${model.name} | ${name} | ${seed} | ${before.reward.toFixed(3)} | ${after.reward.toFixed(3)} | ${before.right} / ${after.right} | ${before.distinct} / ${after.distinct} | ${seconds.toFixed(0)} |`);
        if (seed === SEEDS[0]) examples.push(`${model.name}, ${name}, seed ${seed}, before: ${before.examples.join(', ')}`);
        examples.push(`${model.name}, ${name}, seed ${seed}, after: ${after.examples.join(', ')}`);
      }
    }
    const said = Object.entries(gains).map(([name, g]) => `${name} ${mean(g.right) >= 0 ? '+' : ''}${mean(g.right).toFixed(1)} words with the right letter and ${mean(g.reward) >= 0 ? '+' : ''}${mean(g.reward).toFixed(3)} reward (seeds ${g.right.map((x) => (x >= 0 ? `+${x}` : String(x))).join(', ')} words)`);
    summary.push(`- ${model.name}, mean change over the ${SEEDS.length} seeds: ${said.join('; ')}.`);
  }
  return [
    '## learning: a prompt-dependent reward, full-depth LoRA against the head adapter',
    '',
    `Both bundled models (character tokenizer): \`webgrpo-skill\` (pretrained on the four skill tasks, never on this one; prompts in its chat template) and \`webgrpo-tiny\` (random weights; raw prompts). Task \`first-letter\`; ${STEPS} GRPO steps of ${BATCH} prompts x ${GROUP} completions of at most ${MAX_NEW} characters, temperature 1, for each adapter and seed. LoRA rank 8, alpha 16, all seven projections of all layers, lr ${LORA_LR}, sampling from the merged model after every update; head adapter rank 8, lr ${HEAD_LR}. Measured on the 26 held-out words (one per letter, never trained on), 8 samples each: mean reward, held-out words whose replies most often start with the right letter, and how many distinct starting letters the replies have over the 26 words (1 = the same letter whatever the word).`,
    '',
    '| model | adapter | seed | held-out reward before | after | right first letter, before / after (of 26) | distinct first letters, before / after | wall s |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    ...summary,
    '',
    'What the models write (held-out word, first sample):',
    '',
    ...examples.map((e) => `- ${e}`),
  ].join('\n');
}

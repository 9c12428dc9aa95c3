/**
 * A run's groups as preference pairs, the dataset TRL's offline trainers take (DPOTrainer and the
 * others of its "preference" type): per group, its best completion as `chosen` and its worst as
 * `rejected`, both sampled from the same prompt (the one the model saw), one line per group:
 *
 *   conversational  {"prompt": [{"role": "user", ...}], "chosen": [{"role": "assistant", ...}], "rejected": [...]}
 *   standard        {"prompt": "...", "chosen": "...", "rejected": "..."}
 *
 * A group whose scored rewards all tie (or with fewer than two scored) prefers nothing and is left
 * out. Ties for best or worst go to the first such row.
 */
import { InvalidInputError } from '../errors.js';
import type { ExportCompletion } from '../run/groups.js';
import { conversationalPrompt, escapeLineSeparators, groupsOf, standardPrompt, type ExportSource, type JsonlFormat } from './jsonl.js';

/** One JSON line per group with a reward spread: its best and worst completions. */
export function toPreferenceJsonl(source: ExportSource, options: { format?: JsonlFormat } = {}): string {
  const format = options.format ?? 'conversational';
  if (format !== 'standard' && format !== 'conversational') throw new InvalidInputError('format', `must be 'standard' or 'conversational', got ${String(format)}.`);
  let out = '';
  for (const group of groupsOf(source)) {
    const scored = group.completions.filter((c): c is ExportCompletion & { reward: number } => typeof c.reward === 'number' && Number.isFinite(c.reward));
    if (scored.length < 2) continue;
    const chosen = scored.reduce((best, c) => (c.reward > best.reward ? c : best));
    const rejected = scored.reduce((worst, c) => (c.reward < worst.reward ? c : worst));
    if (chosen.reward === rejected.reward) continue;
    const reply = (c: ExportCompletion) => (format === 'standard' ? c.text : [{ role: 'assistant', content: c.text }]);
    const prompt = format === 'standard' ? standardPrompt(group) : conversationalPrompt(group);
    out += `${escapeLineSeparators(JSON.stringify({ prompt, chosen: reply(chosen), rejected: reply(rejected) }))}\n`;
  }
  return out;
}

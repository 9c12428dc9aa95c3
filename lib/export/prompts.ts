/**
 * The two things TRL takes that a run's rollouts are not by themselves:
 *
 * - `toPromptJsonl`: GRPOTrainer's dataset. One line per item of the run's dataset (GRPOTrainer
 *   samples its own G completions per prompt), the user's own prompt (not a library's or an arm's),
 *   the answer as text in `answer` ('' where the item has none) and the item's id in `item_id`:
 *   GRPOTrainer hands every column besides `prompt` to reward functions as keyword arguments.
 *   {"prompt": [{"role": "user", "content": "..."}], "answer": "...", "item_id": "..."}
 * - `renderPrompts`: chat prompts as the model reads them (its chat template, generation prompt
 *   included), which TRL's standard format needs in place of the messages.
 */
import { InvalidInputError } from '../errors.js';
import type { DatasetItem } from '../core/dataset.js';
import type { PromptInput } from '../core/policy.js';
import type { ExportGroup } from '../run/groups.js';
import type { RunBundle } from '../store/records/index.js';
import { groundTruth, itemMessages } from './item.js';
import { escapeLineSeparators, type JsonlFormat } from './jsonl.js';
import { isRunBundle } from './run.js';

/** What renders a prompt: a policy (its `renderPrompt`), or the function itself. */
export type PromptRenderer = { renderPrompt?(input: PromptInput): Promise<string> } | ((input: PromptInput) => Promise<string>);

export interface PromptJsonlOptions {
  /** 'conversational' (default: role/content lists) or 'standard' (plain strings; chat items through `render`). */
  format?: JsonlFormat;
  /** The standard format's chat items: the run's model (`policy.renderPrompt`), whose chat template renders them. */
  render?: PromptRenderer;
}

/** The groups with each chat prompt's rendered text (`promptText`), as the standard format writes it. */
export async function renderPrompts(groups: Iterable<ExportGroup>, render: PromptRenderer): Promise<ExportGroup[]> {
  const renderOne = rendererOf(render, 'render');
  const out: ExportGroup[] = [];
  for (const group of groups) {
    out.push(group.prompt !== undefined || group.promptText !== undefined || !group.messages ? group : { ...group, promptText: await renderOne({ messages: [...group.messages] }) });
  }
  return out;
}

/** A run's dataset (or the items themselves) as GRPOTrainer's prompt dataset, one JSON line per item. */
export async function toPromptJsonl(source: RunBundle | readonly DatasetItem[], options: PromptJsonlOptions = {}): Promise<string> {
  const items = Array.isArray(source) ? (source as readonly DatasetItem[]) : isRunBundle(source) ? source.items : undefined;
  if (!items) throw new InvalidInputError('source', 'must be a run bundle (exportRun, store.readBundle) or an array of dataset items.');
  const format = options.format ?? 'conversational';
  if (format !== 'standard' && format !== 'conversational') throw new InvalidInputError('format', `must be 'standard' or 'conversational', got ${String(format)}.`);
  const needsRender = format === 'standard' && items.some((item) => item.prompt === undefined);
  if (needsRender && options.render === undefined) {
    throw new InvalidInputError('render', "the standard format needs chat items rendered through the model's chat template: pass `render` (the run's policy, or its renderPrompt), or use format 'conversational'.");
  }
  const renderOne = needsRender ? rendererOf(options.render, 'render') : undefined;
  let out = '';
  for (const item of items) {
    const prompt = format === 'conversational' ? itemMessages(item) : item.prompt ?? (await renderOne!({ messages: itemMessages(item) }));
    out += `${escapeLineSeparators(JSON.stringify({ prompt, answer: groundTruth(item.answer), item_id: item.id ?? '' }))}\n`;
  }
  return out;
}

function rendererOf(render: PromptRenderer | undefined, name: string): (input: PromptInput) => Promise<string> {
  if (typeof render === 'function') return render;
  if (render && typeof render.renderPrompt === 'function') return (input) => render.renderPrompt!(input);
  throw new InvalidInputError(name, "must be a policy that renders prompts (a local ONNX model's) or a function from a prompt to its text; this one has no renderPrompt, so pass the run's model.");
}

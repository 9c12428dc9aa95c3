/**
 * `webgrpo/parquet`: a run's dataset as a parquet file in verl's data format, so a run that
 * outgrows the tab continues in verl (`data.train_files=run.parquet`). One row per item of the
 * run's dataset (verl samples its own groups per prompt), verl's five columns:
 *
 *   data_source   string                        the task (the run's, or `dataSource`)
 *   prompt        list<struct<role, content>>   the user's prompt, as the dataset gives it
 *   ability       string
 *   reward_model  struct<style, ground_truth>   style 'rule', ground_truth the item's answer ('' when none)
 *   extra_info    struct<index, split, item_id, group_ids, responses, rewards, advantages>
 *
 * The prompt is the item's own, not what a method made of it (a library's lessons, an arm's
 * instruction): verl would otherwise train on prompts the user never wrote. The run's replies
 * to the item (every group, in step order, with their rewards and advantages, null where
 * unscored) sit in `extra_info`, the one column verl's reward managers hand to
 * `compute_score(data_source, solution_str, ground_truth, extra_info)`. Each built-in task has its
 * reward file in the package's python/webgrpo_rewards/ (`custom_reward_function.path`).
 * A subpath entry of its own: only this module loads the parquet writer.
 *
 * @module webgrpo/parquet
 */
import { ByteWriter, parquetWrite } from 'hyparquet-writer';
import type { ColumnSource } from 'hyparquet-writer';
import { InvalidInputError } from './errors.js';
import { groundTruth, itemMessages } from './export/item.js';
import { isRunBundle, resultGroups, runResults } from './export/run.js';
import type { RunBundle } from './store/records/index.js';

export interface ParquetExportOptions {
  /** verl's `data_source` (which reward function scores the row). Default: the run's task, else 'webgrpo'. */
  dataSource?: string;
  /** verl's `ability`. Default: the data source. */
  ability?: string;
  /** `extra_info.split`. Default 'train'. */
  split?: string;
}

/** verl's columns of one row, as `exportParquet` writes them and a parquet reader reads them back. */
export interface VerlRow {
  data_source: string;
  prompt: Array<{ role: string; content: string }>;
  ability: string;
  reward_model: { style: 'rule'; ground_truth: string };
  extra_info: {
    /** The item's index in the run's dataset. */
    index: number;
    split: string;
    /** The item's id; '' where it has none. */
    item_id: string;
    /** Per reply: the group it was sampled in (`<runId>:<step>:<index>`). */
    group_ids: string[];
    responses: string[];
    rewards: Array<number | null>;
    advantages: Array<number | null>;
  };
}

const string = (name: string) => ({ name, type: 'BYTE_ARRAY' as const, converted_type: 'UTF8' as const, repetition_type: 'OPTIONAL' as const });
const list = (name: string) => [
  { name, repetition_type: 'OPTIONAL' as const, converted_type: 'LIST' as const, num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
];
const double = (name: string) => ({ name, type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const });

/** The schema pyarrow writes for verl's datasets (lists in the three-level LIST layout). */
const SCHEMA = [
  { name: 'schema', num_children: 5 },
  string('data_source'),
  ...list('prompt'),
  { name: 'element', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  string('content'),
  string('role'),
  string('ability'),
  { name: 'reward_model', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  string('ground_truth'),
  string('style'),
  { name: 'extra_info', repetition_type: 'OPTIONAL' as const, num_children: 7 },
  { name: 'index', type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
  string('split'),
  string('item_id'),
  ...list('group_ids'),
  string('element'),
  ...list('responses'),
  string('element'),
  ...list('rewards'),
  double('element'),
  ...list('advantages'),
  double('element'),
];

/** The rows `exportParquet` writes: one per item of the run's dataset, in dataset order. */
export function verlRows(bundle: RunBundle, options: ParquetExportOptions = {}): VerlRow[] {
  if (!isRunBundle(bundle) || !Array.isArray(bundle.items)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const config = bundle.run.config as { task?: unknown };
  const dataSource = text(options.dataSource, 'dataSource') ?? (typeof config.task === 'string' && config.task !== '' ? config.task : 'webgrpo');
  const ability = text(options.ability, 'ability') ?? dataSource;
  const split = text(options.split, 'split') ?? 'train';
  const rows = bundle.items.map(
    (item, index): VerlRow => ({
      data_source: dataSource,
      prompt: itemMessages(item),
      ability,
      reward_model: { style: 'rule', ground_truth: groundTruth(item.answer) },
      extra_info: { index, split, item_id: item.id ?? '', group_ids: [], responses: [], rewards: [], advantages: [] },
    }),
  );
  for (const result of runResults(bundle)) {
    const row = rows[result.index];
    if (!row) throw new InvalidInputError('run', `run ${bundle.run.id} has a result for item ${result.index}, past its ${rows.length} items.`);
    for (const group of resultGroups(bundle, result)) {
      for (const c of group.completions) {
        row.extra_info.group_ids.push(group.id);
        row.extra_info.responses.push(c.text);
        row.extra_info.rewards.push(finite(c.reward));
        row.extra_info.advantages.push(finite(c.advantage));
      }
    }
  }
  return rows;
}

/**
 * A stored run (`exportRun`, `store.readBundle`) as the bytes of a parquet file in verl's format.
 * A run without dataset items has nothing to train on and is refused (InvalidInputError); a run
 * not yet sampled exports its dataset with empty reply lists.
 */
export function exportParquet(bundle: RunBundle, options: ParquetExportOptions = {}): Uint8Array {
  const rows = verlRows(bundle, options);
  if (rows.length === 0) throw new InvalidInputError('run', `run ${bundle.run.id} has no dataset items; there is nothing to export.`);
  const column = (name: keyof VerlRow, data: unknown[]): ColumnSource => ({ name, data });
  const columnData = [
    column('data_source', rows.map((r) => r.data_source)),
    column('prompt', rows.map((r) => r.prompt)),
    column('ability', rows.map((r) => r.ability)),
    column('reward_model', rows.map((r) => r.reward_model)),
    // INT64 columns take bigints.
    column('extra_info', rows.map((r) => ({ ...r.extra_info, index: BigInt(r.extra_info.index) }))),
  ];
  const writer = new ByteWriter();
  parquetWrite({ writer, columnData, schema: SCHEMA });
  return new Uint8Array(writer.getBuffer());
}

function text(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw new InvalidInputError(name, `must be a non-empty string, got ${JSON.stringify(value)}.`);
  return value;
}

const finite = (value: number | null | undefined): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

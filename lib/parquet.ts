/**
 * `webgrpo/parquet`: a run's dataset and groups as a parquet file in verl's data format, so a run
 * that outgrows the tab continues in verl (`data.train_files=run.parquet`). One row per group
 * (one prompt of one step), verl's five columns first:
 *
 *   data_source   string                        the task (the run's, or `dataSource`)
 *   prompt        list<struct<role, content>>   chat messages, as the policy saw them
 *   ability       string
 *   reward_model  struct<style, ground_truth>   style 'rule', ground_truth the item's answer
 *   extra_info    struct<index, split, group_id, item_id, step, epoch>
 *
 * then the group itself, which verl hands through to reward functions as extra columns:
 * `responses` list<string>, `rewards` and `advantages` list<double> (null where unscored).
 * A subpath entry of its own: only this module loads the parquet writer.
 */
import { ByteWriter, parquetWrite } from 'hyparquet-writer';
import type { ColumnSource } from 'hyparquet-writer';
import { InvalidInputError } from './errors.js';
import { isRunBundle } from './export/run.js';
import { methodOf } from './methods/registry.js';
import type { ChatMessage } from './core/policy.js';
import { itemResultGroup, type ExportGroup } from './run/groups.js';
import type { RunOf } from './run/run.js';
import type { ItemResult, RunBundle } from './store/records.js';
import type { DatasetItem } from './core/dataset.js';

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
  reward_model: { style: 'rule'; ground_truth: string | null };
  extra_info: { index: number; split: string; group_id: string; item_id: string | null; step: number; epoch: number };
  responses: string[];
  rewards: Array<number | null>;
  advantages: Array<number | null>;
}

const string = (name: string, repetition: 'OPTIONAL' | 'REQUIRED' = 'OPTIONAL') => ({ name, type: 'BYTE_ARRAY' as const, converted_type: 'UTF8' as const, repetition_type: repetition });
const list = (name: string) => [
  { name, repetition_type: 'OPTIONAL' as const, converted_type: 'LIST' as const, num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED' as const, num_children: 1 },
];

/** The schema pyarrow writes for verl's datasets (lists in the three-level LIST layout). */
const SCHEMA = [
  { name: 'schema', num_children: 8 },
  string('data_source'),
  ...list('prompt'),
  { name: 'element', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  string('content'),
  string('role'),
  string('ability'),
  { name: 'reward_model', repetition_type: 'OPTIONAL' as const, num_children: 2 },
  string('ground_truth'),
  string('style'),
  { name: 'extra_info', repetition_type: 'OPTIONAL' as const, num_children: 6 },
  { name: 'index', type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
  string('split'),
  string('group_id'),
  string('item_id'),
  { name: 'step', type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
  { name: 'epoch', type: 'INT64' as const, repetition_type: 'OPTIONAL' as const },
  ...list('responses'),
  string('element'),
  ...list('rewards'),
  { name: 'element', type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const },
  ...list('advantages'),
  { name: 'element', type: 'DOUBLE' as const, repetition_type: 'OPTIONAL' as const },
];

/** The rows `exportParquet` writes, in step order: one per group of the run. */
export function verlRows(bundle: RunBundle, options: ParquetExportOptions = {}): VerlRow[] {
  if (!isRunBundle(bundle)) throw new InvalidInputError('run', 'expected a run bundle { run, items, steps, pending } (exportRun, store.readBundle).');
  const config = bundle.run.config as unknown as RunOf<string>['config'] & { task?: unknown };
  const dataSource = text(options.dataSource, 'dataSource') ?? (typeof config.task === 'string' && config.task !== '' ? config.task : 'webgrpo');
  const ability = text(options.ability, 'ability') ?? dataSource;
  const split = text(options.split, 'split') ?? 'train';
  const method = methodOf(bundle.run.kind);
  const pending = [...bundle.pending].sort((a, b) => a.step - b.step || a.position - b.position);
  const results: ItemResult[] = [...bundle.steps.flatMap((step) => step.items), ...pending];
  return results.flatMap((result) => {
    // The run's method says how its groups are written (the router's: one per arm).
    const groups = method?.exportGroups?.(config, bundle.run.id, result) ?? [itemResultGroup(bundle.run.id, result)];
    const item: DatasetItem | undefined = bundle.items[result.index];
    return groups.map(
      (group): VerlRow => ({
        data_source: dataSource,
        prompt: messagesOf(group),
        ability,
        reward_model: { style: 'rule', ground_truth: groundTruth(item?.answer) },
        extra_info: { index: result.index, split, group_id: group.id, item_id: item?.id ?? null, step: result.step, epoch: result.epoch },
        responses: group.completions.map((c) => c.text),
        rewards: group.completions.map((c) => (typeof c.reward === 'number' && Number.isFinite(c.reward) ? c.reward : null)),
        advantages: group.completions.map((c) => (typeof c.advantage === 'number' && Number.isFinite(c.advantage) ? c.advantage : null)),
      }),
    );
  });
}

/**
 * A stored run (`exportRun`, `store.readBundle`) as the bytes of a parquet file in verl's format.
 * A run without a finished group has nothing to train on and is refused (InvalidInputError).
 */
export function exportParquet(bundle: RunBundle, options: ParquetExportOptions = {}): Uint8Array {
  const rows = verlRows(bundle, options);
  if (rows.length === 0) throw new InvalidInputError('run', `run ${bundle.run.id} has no finished group yet; there is nothing to export.`);
  const column = (name: keyof VerlRow, data: unknown[]): ColumnSource => ({ name, data });
  const columnData = [
    column('data_source', rows.map((r) => r.data_source)),
    column('prompt', rows.map((r) => r.prompt)),
    column('ability', rows.map((r) => r.ability)),
    column('reward_model', rows.map((r) => r.reward_model)),
    // INT64 columns take bigints.
    column('extra_info', rows.map((r) => ({ ...r.extra_info, index: BigInt(r.extra_info.index), step: BigInt(r.extra_info.step), epoch: BigInt(r.extra_info.epoch) }))),
    column('responses', rows.map((r) => r.responses)),
    column('rewards', rows.map((r) => r.rewards)),
    column('advantages', rows.map((r) => r.advantages)),
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

/** A raw-text prompt becomes one user message, as verl's chat datasets hold it. */
function messagesOf(group: ExportGroup): Array<{ role: string; content: string }> {
  if (group.messages) return group.messages.map((m: ChatMessage) => ({ role: m.role, content: m.content }));
  return [{ role: 'user', content: group.prompt ?? '' }];
}

/** verl's rule-based rewards compare strings: a number is written as its digits, other JSON as JSON. */
function groundTruth(answer: unknown): string | null {
  if (answer === undefined || answer === null) return null;
  if (typeof answer === 'string') return answer;
  if (typeof answer === 'number' || typeof answer === 'boolean') return String(answer);
  return JSON.stringify(answer);
}

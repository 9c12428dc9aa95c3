/**
 * `exportParquet` (webgrpo/parquet): a stored Training-Free GRPO run (the loop's own, on recorded
 * model outputs) as verl's parquet, read back with hyparquet, a reader independent of the writer:
 * verl's columns with their nested types (a LIST of role/content structs, the reward_model and
 * extra_info structs), one row per group with the group's responses, rewards and advantages, and
 * typed errors for a run with nothing to export and for bad options.
 */
import { parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, runGroups, type RunBundle } from '../../lib/index.js';
import { exportParquet, verlRows } from '../../lib/parquet.js';
import { recordReference, standardShape } from '../tfgrpo/helpers/fixture.js';

let bundle: RunBundle;
beforeAll(async () => {
  bundle = (await recordReference(standardShape())).bundle;
});

const toArrayBuffer = (bytes: Uint8Array) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

describe('exportParquet', () => {
  it('writes verl\'s columns, one row per group, that an independent reader reads back', async () => {
    const bytes = exportParquet(bundle);
    // The parquet magic at both ends.
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('PAR1');
    expect(new TextDecoder().decode(bytes.subarray(bytes.length - 4))).toBe('PAR1');
    const file = toArrayBuffer(bytes);
    const metadata = parquetMetadata(file);
    const schema = parquetSchema(metadata);
    const top = schema.children.map((c) => c.element.name);
    expect(top).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info', 'responses', 'rewards', 'advantages']);
    const field = (name: string) => schema.children.find((c) => c.element.name === name)!;
    // prompt: LIST of struct<content, role>, pyarrow's three-level layout, as verl's datasets hold it.
    const prompt = field('prompt');
    expect(prompt.element.converted_type).toBe('LIST');
    expect(prompt.children[0].element.repetition_type).toBe('REPEATED');
    expect(prompt.children[0].children[0].children.map((c) => c.element.name).sort()).toEqual(['content', 'role']);
    expect(field('reward_model').children.map((c) => c.element.name).sort()).toEqual(['ground_truth', 'style']);
    expect(field('extra_info').children.map((c) => [c.element.name, c.element.type])).toEqual([
      ['index', 'INT64'], ['split', 'BYTE_ARRAY'], ['group_id', 'BYTE_ARRAY'], ['item_id', 'BYTE_ARRAY'], ['step', 'INT64'], ['epoch', 'INT64'],
    ]);

    const rows = (await parquetReadObjects({ file })) as Array<Record<string, any>>;
    const results = bundle.steps.flatMap((s) => s.items);
    const groups = runGroups(bundle);
    expect(rows).toHaveLength(results.length);
    expect(Number(metadata.num_rows)).toBe(results.length);
    rows.forEach((row, i) => {
      const result = results[i];
      const item = bundle.items[result.index];
      expect(row.data_source).toBe('alphabetise');
      expect(row.ability).toBe('alphabetise');
      // The prompt as the policy saw it (the library's lessons included), as chat messages.
      expect(row.prompt).toEqual(result.prompt.messages!.map((m) => ({ role: m.role, content: m.content })));
      expect(row.reward_model).toEqual({ style: 'rule', ground_truth: item.answer });
      expect(row.extra_info).toEqual({ index: BigInt(result.index), split: 'train', group_id: groups[i].id, item_id: item.id, step: BigInt(result.step), epoch: BigInt(result.epoch) });
      expect(row.responses).toEqual(result.rollouts.map((r) => r.text));
      expect(row.rewards).toEqual(result.rollouts.map((r) => r.reward ?? null));
      expect(row.advantages).toEqual(result.rollouts.map((r) => r.advantage ?? null));
    });
    expect(typeof bundle.items[0].answer).toBe('string');
    // Later steps carry lessons in their prompts; the export keeps them.
    expect(rows.at(-1)!.prompt.at(-1).content).toMatch(/^\[G\d+\] /m);
    // Every reader sees the same rows as the writer's own view of them.
    const own = verlRows(bundle);
    expect(rows.map((r) => r.responses)).toEqual(own.map((r) => r.responses));
  });

  it('takes the data source, ability and split it is given, and writes answers that are not strings as text', async () => {
    const numbered: RunBundle = { ...bundle, items: bundle.items.map((item, i) => ({ ...item, answer: i % 2 === 0 ? 40 + i : { sorted: ['a', 'b'] } })) };
    const bytes = exportParquet(numbered, { dataSource: 'openai/gsm8k', ability: 'math', split: 'test' });
    const rows = (await parquetReadObjects({ file: toArrayBuffer(bytes) })) as Array<Record<string, any>>;
    expect(new Set(rows.map((r) => r.data_source))).toEqual(new Set(['openai/gsm8k']));
    expect(new Set(rows.map((r) => r.ability))).toEqual(new Set(['math']));
    expect(new Set(rows.map((r) => r.extra_info.split))).toEqual(new Set(['test']));
    const results = bundle.steps.flatMap((s) => s.items);
    rows.forEach((row, i) => {
      const index = results[i].index;
      expect(row.reward_model.ground_truth).toBe(index % 2 === 0 ? String(40 + index) : '{"sorted":["a","b"]}');
    });
  });

  it('refuses a run with no finished group, and bad options, with typed errors', () => {
    const empty: RunBundle = { ...bundle, steps: [], pending: [] };
    expect(() => exportParquet(empty)).toThrow(InvalidInputError);
    expect(() => exportParquet(empty)).toThrow(/no finished group/);
    expect(() => exportParquet(bundle, { dataSource: '' })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    expect(() => exportParquet({ groups: [] } as unknown as RunBundle)).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
  });
});

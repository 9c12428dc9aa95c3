/**
 * `exportParquet` (webgrpo/parquet): a stored Training-Free GRPO run (the loop's own, on recorded
 * model outputs) as verl's parquet, read back with hyparquet, a reader independent of the writer:
 * verl's columns with their nested types (a LIST of role/content structs, the reward_model and
 * extra_info structs), one row per item of the dataset with the user's own prompt (not the one
 * the library's lessons were put into), the answer as the ground truth ('' where there is none),
 * the item's replies, rewards and advantages in extra_info (what verl hands a reward function),
 * and typed errors for a run with nothing to export and for bad options.
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
  it('writes verl\'s columns, one row per item with the user\'s prompt and the run\'s replies in extra_info, that an independent reader reads back', async () => {
    const bytes = exportParquet(bundle);
    // The parquet magic at both ends.
    expect(new TextDecoder().decode(bytes.subarray(0, 4))).toBe('PAR1');
    expect(new TextDecoder().decode(bytes.subarray(bytes.length - 4))).toBe('PAR1');
    const file = toArrayBuffer(bytes);
    const metadata = parquetMetadata(file);
    const schema = parquetSchema(metadata);
    expect(schema.children.map((c) => c.element.name)).toEqual(['data_source', 'prompt', 'ability', 'reward_model', 'extra_info']);
    const field = (name: string) => schema.children.find((c) => c.element.name === name)!;
    // prompt: LIST of struct<content, role>, pyarrow's three-level layout, as verl's datasets hold it.
    const prompt = field('prompt');
    expect(prompt.element.converted_type).toBe('LIST');
    expect(prompt.children[0].element.repetition_type).toBe('REPEATED');
    expect(prompt.children[0].children[0].children.map((c) => c.element.name).sort()).toEqual(['content', 'role']);
    expect(field('reward_model').children.map((c) => c.element.name).sort()).toEqual(['ground_truth', 'style']);
    const extra = field('extra_info').children;
    expect(extra.map((c) => c.element.name)).toEqual(['index', 'split', 'item_id', 'group_ids', 'responses', 'rewards', 'advantages']);
    expect(extra.slice(0, 3).map((c) => c.element.type)).toEqual(['INT64', 'BYTE_ARRAY', 'BYTE_ARRAY']);
    expect(extra.slice(3).map((c) => [c.element.converted_type, c.children[0].children[0].element.type])).toEqual([
      ['LIST', 'BYTE_ARRAY'], ['LIST', 'BYTE_ARRAY'], ['LIST', 'DOUBLE'], ['LIST', 'DOUBLE'],
    ]);

    const rows = (await parquetReadObjects({ file })) as Array<Record<string, any>>;
    // One row per prompt: 6 items, though 2 epochs sampled each twice.
    expect(rows).toHaveLength(bundle.items.length);
    expect(Number(metadata.num_rows)).toBe(6);
    const results = bundle.steps.flatMap((s) => s.items);
    const groups = runGroups(bundle);
    expect(results).toHaveLength(12);
    rows.forEach((row, index) => {
      const item = bundle.items[index];
      expect(row.data_source).toBe('alphabetise');
      expect(row.ability).toBe('alphabetise');
      // The user's prompt, as the dataset gave it.
      expect(row.prompt).toEqual(item.messages);
      expect(row.reward_model).toEqual({ style: 'rule', ground_truth: item.answer });
      // The item's groups in step order, every reply with its reward and advantage.
      const own = results.flatMap((r, i) => (r.index === index ? [{ r, group: groups[i] }] : []));
      expect(own).toHaveLength(2);
      expect(row.extra_info).toEqual({
        index: BigInt(index),
        split: 'train',
        item_id: item.id,
        group_ids: own.flatMap(({ r, group }) => r.rollouts.map(() => group.id)),
        responses: own.flatMap(({ r }) => r.rollouts.map((x) => x.text)),
        rewards: own.flatMap(({ r }) => r.rollouts.map((x) => x.reward)),
        advantages: own.flatMap(({ r }) => r.rollouts.map((x) => x.advantage)),
      });
    });
    // Later steps' prompts carried lessons; the export gives the prompt the user wrote.
    expect(results.at(-1)!.prompt.messages!.at(-1)!.content).toMatch(/^\[G\d+\] /m);
    expect(rows.some((r) => /\[G\d+\]/.test(JSON.stringify(r.prompt)))).toBe(false);
    // Every reader sees the same rows as the writer's own view of them.
    expect(rows.map((r) => r.extra_info.responses)).toEqual(verlRows(bundle).map((r) => r.extra_info.responses));
  });

  it('takes the data source, ability and split it is given, writes answers that are not strings as text, and no answer or id as \'\'', async () => {
    const numbered: RunBundle = {
      ...bundle,
      items: bundle.items.map((item, i) => (i === 5 ? { messages: item.messages } : { ...item, answer: i % 2 === 0 ? 40 + i : { sorted: ['a', 'b'] } })),
    };
    const bytes = exportParquet(numbered, { dataSource: 'openai/gsm8k', ability: 'math', split: 'test' });
    const rows = (await parquetReadObjects({ file: toArrayBuffer(bytes) })) as Array<Record<string, any>>;
    expect(new Set(rows.map((r) => r.data_source))).toEqual(new Set(['openai/gsm8k']));
    expect(new Set(rows.map((r) => r.ability))).toEqual(new Set(['math']));
    expect(new Set(rows.map((r) => r.extra_info.split))).toEqual(new Set(['test']));
    expect(rows.map((r) => r.reward_model.ground_truth)).toEqual(['40', '{"sorted":["a","b"]}', '42', '{"sorted":["a","b"]}', '44', '']);
    expect(rows[5].extra_info.item_id).toBe('');
  });

  it('exports a run not yet sampled as its dataset, and refuses one without items and bad options, with typed errors', async () => {
    const fresh: RunBundle = { ...bundle, steps: [], pending: [] };
    const rows = (await parquetReadObjects({ file: toArrayBuffer(exportParquet(fresh)) })) as Array<Record<string, any>>;
    expect(rows).toHaveLength(6);
    expect(rows.every((r) => r.extra_info.responses.length === 0 && r.extra_info.rewards.length === 0)).toBe(true);
    const empty: RunBundle = { ...fresh, items: [] };
    expect(() => exportParquet(empty)).toThrow(InvalidInputError);
    expect(() => exportParquet(empty)).toThrow(/no dataset items/);
    expect(() => exportParquet(bundle, { dataSource: '' })).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
    expect(() => exportParquet({ groups: [] } as unknown as RunBundle)).toThrow(expect.objectContaining({ code: 'InvalidInput' }));
  });
});

/**
 * The generated models: reproducible byte for byte, genuine Llamas (the ONNX graph matches a
 * from-scratch forward pass, with padding and with a cache), and genuine transformers.js models
 * (AutoTokenizer + AutoModelForCausalLM load them offline and generate()).
 */
import { readFile, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { AutoModelForCausalLM, AutoTokenizer, env, Tensor } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildModel, TINY } from '../../scripts/build-model/index.js';
import { buildOtherModel, TINY_DIR } from './fixtures.js';
import { loadReference } from './llama-reference.js';

env.allowRemoteModels = false;

let otherDir = '';
beforeAll(async () => {
  otherDir = await buildOtherModel();
});
afterAll(async () => {
  if (otherDir) await rm(dirname(otherDir), { recursive: true, force: true });
});

async function filesOf(dir: string, sub = ''): Promise<string[]> {
  const entries = await readdir(join(dir, sub), { withFileTypes: true });
  const nested = await Promise.all(entries.map((e) => (e.isDirectory() ? filesOf(dir, join(sub, e.name)) : [join(sub, e.name)])));
  return nested.flat().sort();
}

describe('npm run build:model', () => {
  it('rebuilds the committed tiny model byte for byte from its seed', async () => {
    const dir = join(dirname(otherDir), 'tiny');
    await buildModel(TINY, dir);
    const committed = await filesOf(TINY_DIR);
    expect(await filesOf(dir)).toEqual(committed);
    expect(committed).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    for (const file of committed) {
      expect(Buffer.compare(await readFile(join(dir, file)), await readFile(join(TINY_DIR, file))), file).toBe(0);
    }
  });
});

/** Max |a - b| over all positions. */
function maxDiff(a: Float64Array[], b: ArrayLike<number>, offset = 0, vocab = a[0].length): number {
  let diff = 0;
  a.forEach((row, t) => row.forEach((v, j) => (diff = Math.max(diff, Math.abs(v - b[offset + t * vocab + j])))));
  return diff;
}

describe.each([
  ['the bundled tiny model', () => TINY_DIR],
  ['a differently shaped model (MQA, untied head)', () => otherDir],
])('%s', (_, dirOf) => {
  it('computes what a from-scratch Llama computes: plain, left-padded, and from a cache', async () => {
    const dir = dirOf();
    const reference = await loadReference(dir);
    const model = await AutoModelForCausalLM.from_pretrained(dir);
    const V = reference.config.vocab_size;
    const ids = [1, 40, 77, 12, 95, 33, 60, 7, 88, 21, 54, 9];
    const expected = reference.forward(ids);
    const int64 = (values: number[], dims: number[]) => new Tensor('int64', BigInt64Array.from(values.map(BigInt)), dims);

    // One sequence.
    const plain = await model({ input_ids: int64(ids, [1, ids.length]), attention_mask: int64(ids.map(() => 1), [1, ids.length]) });
    expect(maxDiff(expected, plain.logits.data as Float32Array)).toBeLessThan(2e-4);

    // Two rows, the shorter one left-padded: padding must not leak into real positions.
    const short = ids.slice(0, 9);
    const batch = await model({
      input_ids: int64([3, 3, 3, ...short, ...ids], [2, ids.length]),
      attention_mask: int64([0, 0, 0, ...short.map(() => 1), ...ids.map(() => 1)], [2, ids.length]),
    });
    const logits = batch.logits.data as Float32Array;
    expect(maxDiff(reference.forward(short), logits, 3 * V, V)).toBeLessThan(2e-4);
    expect(maxDiff(expected, logits, ids.length * V, V)).toBeLessThan(2e-4);

    // The last 4 tokens on top of the cache of the first 8.
    const head = await model({ input_ids: int64(ids.slice(0, 8), [1, 8]), attention_mask: int64(new Array(8).fill(1), [1, 8]) });
    const past = Object.fromEntries(
      Object.entries(head)
        .filter(([name]) => name.startsWith('present'))
        .map(([name, tensor]) => [name.replace('present', 'past_key_values'), tensor]),
    );
    const session = (model as unknown as { sessions: { model: { inputNames: string[]; run(feeds: object): Promise<Record<string, { data: Float32Array }>> } } }).sessions.model;
    const step = (keep: number) =>
      session.run({
        input_ids: int64(ids.slice(8), [1, 4]).ort_tensor,
        attention_mask: int64(new Array(12).fill(1), [1, 12]).ort_tensor,
        position_ids: int64([8, 9, 10, 11], [1, 4]).ort_tensor,
        ...(session.inputNames.includes('num_logits_to_keep') ? { num_logits_to_keep: new Tensor('int64', BigInt64Array.of(BigInt(keep)), []).ort_tensor } : {}),
        ...Object.fromEntries(Object.entries(past).map(([name, t]) => [name, (t as Tensor).ort_tensor])),
      });
    expect(maxDiff(expected.slice(8), (await step(0)).logits.data)).toBeLessThan(2e-4);
    if (session.inputNames.includes('num_logits_to_keep')) {
      const last = (await step(1)).logits.data;
      expect(last).toHaveLength(V);
      expect(maxDiff(expected.slice(11), last)).toBeLessThan(2e-4);
    }
    await model.dispose();
  });

  it('loads offline with AutoTokenizer and AutoModelForCausalLM, and generate() runs', async () => {
    const dir = dirOf();
    const tokenizer = await AutoTokenizer.from_pretrained(dir);
    const model = await AutoModelForCausalLM.from_pretrained(dir);
    const text = 'Hello, world! 1+2=3';
    expect(tokenizer.decode(tokenizer.encode(text), { skip_special_tokens: true })).toBe(text);
    const chat = tokenizer.apply_chat_template([{ role: 'user', content: 'Hi' }], { add_generation_prompt: true, tokenize: false });
    expect(chat).toBe('<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');

    const inputs = tokenizer('Once upon a time');
    const greedy = (await model.generate({ ...inputs, max_new_tokens: 12, do_sample: false })) as Tensor;
    expect(greedy.dims[0]).toBe(1);
    expect(greedy.dims[1]).toBeGreaterThan(inputs.input_ids.dims[1]);
    const sampled = (await model.generate({ ...inputs, max_new_tokens: 12, do_sample: true, top_k: 0 })) as Tensor;
    expect(typeof tokenizer.decode(sampled.tolist()[0], { skip_special_tokens: true })).toBe('string');
    await model.dispose();
  });
});

/**
 * A training-free run's prompts checked against the policy's context when the run starts: an
 * experience budget the context cannot hold, or items whose prompt with a full library and the
 * reply would outgrow it, are an InvalidInputError naming the numbers, before anything is stored
 * or sampled, not a failure at the step where the library outgrows the context. The bundled model
 * (real ONNX runtime, 2048 positions) is the policy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError, MemoryStore, trainingFreeGrpo, type DatasetItem, type GenerateGroupOptions, type Policy } from '../../lib/index.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let model: OnnxPolicy;
beforeAll(async () => {
  model = await loadOnnxPolicy({ model: await bundledModelPath(), device: 'cpu' });
});
afterAll(() => model?.dispose());

/** The model, with every sampling call counted. */
function counted(policy: Policy): Policy & { calls: number } {
  const wrapped = {
    calls: 0,
    info: policy.info,
    encode: policy.encode!.bind(policy),
    async generateGroup(options: GenerateGroupOptions) {
      wrapped.calls += 1;
      return policy.generateGroup(options);
    },
    dispose: async () => undefined,
  };
  return wrapped;
}

const reward = { name: 'length', score: ({ text }: { text: string }) => text.length / 10 };
/** Items of `chars` characters (one token per character for the bundled tokenizer). */
const items = (chars: number, n = 2): DatasetItem[] => Array.from({ length: n }, (_, i) => ({ messages: [{ role: 'user' as const, content: `${i}`.padEnd(chars, 'x') }] }));

describe("a training-free run's prompts and the policy's context", () => {
  it('refuses at once an experience budget that leaves the task no room', () => {
    expect(model.info.maxPositions).toBe(2048);
    const start = () => trainingFreeGrpo({ policy: model, dataset: items(10), rewards: [reward], experienceTokenBudget: 2048, maxNewTokens: 32 });
    expect(start).toThrow(InvalidInputError);
    expect(start).toThrow(/2048 tokens of experiences plus maxNewTokens 32 .* context of 2048 tokens; set experienceTokenBudget to at most 1919/);
  });

  it('refuses a run whose longest prompt with a full library would outgrow the context, before storing or sampling anything', async () => {
    const policy = counted(model);
    const store = new MemoryStore();
    // 1500 experiences + 500 reply + the item of 40 characters, the template and markup: past 2048.
    const dataset = [...items(10), ...items(40, 1)];
    const run = trainingFreeGrpo({ policy, dataset, rewards: [reward], store, experienceTokenBudget: 1500, maxNewTokens: 500, runId: 'too-long' });
    const error = await run.result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as InvalidInputError).message).toMatch(/^experienceTokenBudget: dataset\[2\]'s prompt with a full library \(1500 tokens of experiences\).* maxNewTokens 500, comes to (\d+) tokens, over the policy's context of 2048 tokens; lower experienceTokenBudget to (\d+)/);
    expect(policy.calls).toBe(0);
    expect(await store.listRuns()).toEqual([]);

    // The budget the error names fits: the same run starts and samples.
    const [, total, fitting] = /comes to (\d+) tokens.*lower experienceTokenBudget to (\d+)/.exec((error as Error).message)!;
    expect(Number(fitting)).toBe(1500 - (Number(total) - 2048));
    const abort = new AbortController();
    const fits = trainingFreeGrpo({ policy, dataset, rewards: [reward], store, experienceTokenBudget: Number(fitting), maxNewTokens: 500, groupSize: 2, signal: abort.signal, runId: 'fits' });
    for await (const event of fits) {
      if (event.type === 'rollouts') abort.abort();
    }
    expect(policy.calls).toBeGreaterThan(0);
    expect((await store.getRun('fits'))?.status).toBe('aborted');
  });

  it('checks the held-out items with the evaluation\'s own reply length', async () => {
    const run = trainingFreeGrpo({
      policy: model,
      dataset: items(10),
      rewards: [reward],
      experienceTokenBudget: 1024,
      maxNewTokens: 32,
      evaluation: { dataset: items(10), maxNewTokens: 1000, temperature: 0 },
    });
    await expect(run.result()).rejects.toThrow(/^experienceTokenBudget: evaluation\.dataset\[\d\]'s prompt .* maxNewTokens 1000, comes to \d+ tokens, over the policy's context of 2048/);
  });
});

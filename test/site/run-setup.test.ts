/**
 * The setup form of a stored run (run-setup.ts): a run started from a form, read back from the
 * store, gives that form again, so after a reload or a click in the run list Start runs what the
 * page shows. Training-free and router runs are started through the playground's own methods on
 * the toy policy; the adapter runs' records are the fields their configs store.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore, type RunRecord } from '../../lib/index.js';
import { builtinTasks } from '../../lib/tasks.js';
import { choiceOf, type PlaygroundRun } from '../../site/lib/methods.js';
import { setupOfRun } from '../../site/lib/run-setup.js';
import { INITIAL_SETUP, type Setup } from '../../site/lib/setup.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { sampleRun } from '../tfgrpo/helpers/records.js';

/** The run `setup` starts, as the store keeps it once its first event is out. */
async function started(setup: Setup): Promise<RunRecord> {
  const store = new MemoryStore();
  const controller = new AbortController();
  const task = builtinTasks[setup.task];
  const run: PlaygroundRun = choiceOf(setup.method).start({
    policy: createToyPolicy(),
    trainer: null,
    store,
    signal: controller.signal,
    rewards: task.rewards,
    task: task.name,
    onStream: () => {},
    dataset: task.dataset({ size: setup.items, seed: setup.seed }),
    setup,
  });
  const events = run[Symbol.asyncIterator]();
  await events.next();
  controller.abort();
  await events.return?.();
  return (await store.getRun(run.runId))!;
}

// A form that differs from the defaults in every field a run keeps.
const other: Setup = { ...INITIAL_SETUP, task: 'copy-format', method: 'lora', items: 64, groupSize: 8, epochs: 2, batchSize: 8, temperature: 1, maxNewTokens: 16, seed: 0, rank: 8, lr: 0.002, iterations: 1 };

describe('the setup form of a stored run', () => {
  it('gives back the exemplars form a run was started from', async () => {
    const setup: Setup = { ...INITIAL_SETUP, method: 'exemplars', task: 'alphabetise', items: 3, groupSize: 3, epochs: 2, batchSize: 2, temperature: 0.7, maxNewTokens: 9, seed: 5, retrieve: 1, maxExemplars: 4 };
    expect(setupOfRun(await started(setup), other)).toEqual({ ...other, ...pick(setup, ['method', 'task', 'items', 'groupSize', 'epochs', 'batchSize', 'temperature', 'maxNewTokens', 'seed', 'retrieve', 'maxExemplars']), rateMyself: false });
  });

  it('gives back the router form a run was started from', async () => {
    const setup: Setup = { ...INITIAL_SETUP, method: 'router', task: 'digits', items: 4, groupSize: 4, epochs: 3, batchSize: 2, temperature: 1.2, maxNewTokens: 7, seed: 2, routerLr: 0.3, minSamples: 2 };
    expect(setupOfRun(await started(setup), other)).toEqual({ ...other, ...pick(setup, ['method', 'task', 'items', 'groupSize', 'epochs', 'batchSize', 'temperature', 'maxNewTokens', 'seed', 'routerLr', 'minSamples']), rateMyself: false });
  });

  it("takes an adapter run's learning rate, rank, updates and dynamic sampling from its config", () => {
    const base = sampleRun('x');
    const lora = { ...base, kind: 'lora', config: { ...base.config, task: 'sort-words', optimizer: { lr: 0.004 }, lora: { r: 2, alpha: 4 }, numIterations: 3, dynamicSampling: { maxResamples: 3 } } } as unknown as RunRecord;
    expect(setupOfRun(lora, INITIAL_SETUP)).toMatchObject({ method: 'lora', task: 'sort-words', lr: 0.004, rank: 2, iterations: 3, dynamicSampling: true, items: base.itemCount });
    const head = { ...base, kind: 'gradient', config: { ...base.config, task: 'count-letter', optimizer: { lr: 0.01 }, adapter: { rank: 8 }, numIterations: 1 } } as unknown as RunRecord;
    expect(setupOfRun(head, { ...INITIAL_SETUP, dynamicSampling: true })).toMatchObject({ method: 'gradient', task: 'count-letter', rank: 8, dynamicSampling: false });
  });

  it('keeps the form’s dataset for a run of an uploaded file, with the run’s reward', () => {
    const base = sampleRun('x');
    const upload = { ...base, config: { ...base.config, task: undefined, rewards: [{ name: 'exact', weight: 1 }] } } as unknown as RunRecord;
    const form = { ...INITIAL_SETUP, task: 'upload', items: 12 };
    expect(setupOfRun(upload, form)).toMatchObject({ task: 'upload', items: 12, reward: 'exact', method: 'lessons' });
  });
});

function pick<K extends keyof Setup>(setup: Setup, keys: K[]): Pick<Setup, K> {
  return Object.fromEntries(keys.map((k) => [k, setup[k]])) as Pick<Setup, K>;
}

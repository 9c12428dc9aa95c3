/**
 * The frame protocol of `createGrpoTool` (that of the @polyweave/grpo tool), driven by the
 * scripted model (a deterministic fake of a language model, see helpers/scripted-policy.ts), and
 * its drop-in options (`apiKey`, `model`, `baseURL`) against a real OpenAI-compatible server on
 * 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';
import { startToyServer } from '../serve/helpers.js';
import { createGrpoTool, MemoryStore, type Frame, type GrpoToolOptions, type Policy } from '../../lib/index.js';
import { alphabetise } from '../../lib/tasks/index.js';
import { scriptedPolicy } from './helpers/scripted-policy.js';

const dataset = alphabetise.dataset({ size: 4, seed: 2 });

function harness(options: Partial<GrpoToolOptions> = {}) {
  const tool = createGrpoTool({ policy: scriptedPolicy(), dataset, rewards: alphabetise.rewards, ...options });
  const frames: Frame[] = [];
  const waiters: Array<{ type: string; resolve: (f: Frame) => void }> = [];
  tool.source.pipe({
    write(frame) {
      frames.push(frame);
      for (const w of waiters.filter((w) => w.type === frame.type)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(frame);
      }
    },
  });
  const next = (type: string) => new Promise<Frame>((resolve) => waiters.push({ type, resolve }));
  return { tool, frames, next, send: (frame: Frame) => tool.sink.write(frame) };
}

/** A policy whose every generateGroup waits until the test opens its gate, and says when it is entered. */
function gatedPolicy() {
  const inner = scriptedPolicy();
  let entered!: () => void;
  const calls: Array<Promise<void>> = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const firstCall = new Promise<void>((resolve) => (entered = resolve));
  const policy: Policy = {
    ...inner,
    generateGroup: async (o) => {
      entered();
      calls.push(gate);
      await gate;
      return inner.generateGroup(o);
    },
  };
  return { policy, firstCall, open };
}

describe('createGrpoTool frame protocol', () => {
  it('answers DESCRIBE with its name, capabilities and argument schema', () => {
    const { tool, frames, send } = harness();
    expect(tool._toolName).toBe('grpo');
    send({ type: 'DESCRIBE' });
    expect(frames).toHaveLength(1);
    expect(frames[0].type).toBe('DESCRIPTION');
    const content = frames[0].content as { name: string; capabilities: string[]; schema: { properties: Record<string, unknown> } };
    expect(content.name).toBe('grpo');
    expect(content.capabilities).toEqual(['write', 'execute']);
    expect(Object.keys(content.schema.properties)).toEqual(['dataset', 'groupSize', 'epochs']);
  });

  it('runs on TOOL_CALL and reports { experiences, epochs, itemsProcessed }; a second call while running is refused', async () => {
    const store = new MemoryStore();
    const { tool, frames, next, send } = harness({ store });
    const result = next('TOOL_RESULT');
    send({ type: 'TOOL_CALL', content: {} });
    send({ type: 'TOOL_CALL', content: {} });
    expect(frames).toContainEqual({ type: 'ERROR', content: { message: 'Already running' } });
    const content = (await result).content as { experiences: unknown[]; epochs: number; itemsProcessed: number };
    expect(content.epochs).toBe(1);
    expect(content.itemsProcessed).toBe(4);
    expect(content.experiences.length).toBeGreaterThan(0);
    expect(tool.getExperiences()).toEqual(content.experiences);
    const [run] = await store.listRuns();
    expect(run.config).toMatchObject({ groupSize: 4, epochs: 1 });
  });

  it('takes dataset, groupSize and epochs overrides, the @polyweave/grpo tool\'s items included, and carries the library over', async () => {
    const store = new MemoryStore();
    const { tool, next, send } = harness({ store });
    const first = next('TOOL_RESULT');
    send({ type: 'TOOL_CALL', content: { epochs: 2, groupSize: 3 } });
    const firstContent = (await first).content as { epochs: number; itemsProcessed: number };
    expect(firstContent).toMatchObject({ epochs: 2, itemsProcessed: 8 });
    const learned = tool.getExperiences();

    const second = next('TOOL_RESULT');
    send({ type: 'TOOL_CALL', content: { dataset: [{ task: 'Sort array [3, 1, 2]', expected: '[1, 2, 3]' }, 'Name a prime number.'], epochs: 1 } });
    expect(((await second).content as { itemsProcessed: number }).itemsProcessed).toBe(2);
    const runs = await store.listRuns();
    const latest = runs.find((r) => r.itemCount === 2);
    expect(latest?.config.groupSize).toBe(4);
    expect(latest?.initialLibrary.entries).toEqual(learned);
    expect(await store.getItems(latest!.id)).toEqual([{ prompt: 'Sort array [3, 1, 2]', answer: '[1, 2, 3]' }, { prompt: 'Name a prime number.' }]);
  });

  it('rejects bad arguments and unknown frames with ERROR frames, and buffers frames until piped', async () => {
    const tool = createGrpoTool({ policy: scriptedPolicy(), rewards: alphabetise.rewards });
    tool.sink.write({ type: 'TOOL_CALL', content: {} });
    tool.sink.write({ type: 'TOOL_CALL', content: { dataset: dataset, groupSize: 1 } });
    tool.sink.write({ type: 'TOOL_CALL', content: { dataset: 'everything' } });
    tool.sink.write({ type: 'TOOL_CALL', content: [1] });
    tool.sink.write({ type: 'TOOL_CALL', content: { dataset: [42] } });
    tool.sink.write({ type: 'REWIND' });
    tool.sink.write(null as unknown as Frame);
    const frames: Frame[] = [];
    tool.source.pipe({ write: (f) => frames.push(f) });
    const messages = frames.map((f) => (f.type === 'ERROR' ? (f.content as { message: string }).message : f.type));
    expect(messages).toEqual([
      expect.stringMatching(/^dataset: give a non-empty array/),
      expect.stringMatching(/^groupSize: expected an integer >= 2/),
      expect.stringMatching(/^dataset: give a non-empty array/),
      expect.stringMatching(/^content: TOOL_CALL content must be an object/),
      expect.stringMatching(/^dataset\[0\]: expected a string or an object/),
      expect.stringMatching(/^Unknown frame type "REWIND"/),
      'A frame is an object with a string "type".',
    ]);
  });

  it('normalises the @polyweave/grpo tool\'s initialExperiences and returns them from getExperiences', () => {
    const { tool } = harness({ initialExperiences: [{ item: 'example', output: 'result', score: 0.8 }] });
    expect(tool.getExperiences()).toEqual([{ id: 'E0', item: 'example', output: 'result', score: 0.8, createdStep: 0, updatedStep: 0 }]);
  });

  it('stops on CANCEL and ABORT without a TOOL_RESULT, and accepts a new TOOL_CALL at once', async () => {
    for (const stop of ['CANCEL', 'ABORT']) {
      const gated = gatedPolicy();
      const store = new MemoryStore();
      const { frames, next, send } = harness({ policy: gated.policy, store, loop: { batchSize: 1 } });
      send({ type: 'TOOL_CALL', content: {} });
      // The stop arrives while the first step's group is being written.
      await gated.firstCall;
      send({ type: stop });
      gated.open();
      // CANCEL lets the step in progress finish and commit; ABORT stops inside it.
      await expect.poll(async () => (await store.listRuns())[0].status).not.toBe('running');
      const [stopped] = await store.listRuns();
      expect(stopped.status).toBe('aborted');
      expect((await store.listSteps(stopped.id)).length).toBe(stop === 'CANCEL' ? 1 : 0);
      expect(frames.filter((f) => f.type === 'TOOL_RESULT' || f.type === 'ERROR')).toEqual([]);
      const done = next('TOOL_RESULT');
      send({ type: 'TOOL_CALL', content: { epochs: 1, dataset: dataset.slice(0, 1) } });
      expect(((await done).content as { itemsProcessed: number }).itemsProcessed).toBe(1);
    }
  });

  it('reports a failed run as ERROR then TOOL_RESULT { experiences, failed: true }', async () => {
    const broken: Policy = { ...scriptedPolicy(), generateGroup: async () => Promise.reject(new Error('model crashed')) };
    const { next, send } = harness({ policy: broken, initialExperiences: ['Keep calm.'] });
    const error = next('ERROR');
    const result = next('TOOL_RESULT');
    send({ type: 'TOOL_CALL', content: {} });
    expect((await error).content).toEqual({ message: 'model crashed' });
    expect((await result).content).toEqual({ experiences: [{ id: 'G0', text: 'Keep calm.', createdStep: 0, updatedStep: 0 }], failed: true });
  });

  it('in tick pace, advances one step per TICK', async () => {
    // Each call of the model (the group and the critic's calls) records how many TICKs had been
    // sent: the calls of step k + 1 (one prompt per step) may come only after the k-th TICK.
    let ticks = 0;
    const seen: number[] = [];
    const inner = scriptedPolicy();
    const counting: Policy = { ...inner, generateGroup: (o) => (seen.push(ticks), inner.generateGroup(o)) };
    const store = new MemoryStore();
    const { next, send } = harness({ policy: counting, store, pace: 'tick', loop: { batchSize: 1 } });
    const result = next('TOOL_RESULT');
    send({ type: 'TOOL_CALL', content: {} });
    // The run is stored once the tool has checked its options and prompts, not at the call itself.
    await expect.poll(async () => (await store.listRuns()).length).toBe(1);
    const [run] = await store.listRuns();
    const steps = async () => (await store.listSteps(run.id)).length;
    for (let k = 1; k <= 3; k++) {
      await expect.poll(steps).toBe(k);
      ticks++;
      send({ type: 'TICK' });
    }
    await expect.poll(steps).toBe(4);
    ticks++;
    send({ type: 'TICK' });
    expect(((await result).content as { itemsProcessed: number }).itemsProcessed).toBe(4);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect([...new Set(seen)]).toEqual([0, 1, 2, 3]);
  });

  it('refuses frames after close', async () => {
    const { tool, frames, send } = harness();
    await tool.close();
    send({ type: 'DESCRIBE' });
    expect(frames).toEqual([{ type: 'ERROR', content: { message: 'The grpo tool is closed.' } }]);
  });
});

describe('createGrpoTool as a drop-in for the @polyweave/grpo tool', () => {
  it('builds an OpenAI-compatible policy from { apiKey, model, baseURL } and trains with it', async () => {
    const toy = await startToyServer({ apiKey: 'sk-tool' });
    try {
      const options = {
        apiKey: 'sk-tool',
        model: 'toy',
        baseURL: toy.url,
        dataset: [
          { task: 'Sort array', expected: 'sorted array' },
          { task: 'Find max', expected: 'maximum value' },
        ],
        groupSize: 2,
        epochs: 1,
        initialExperiences: [{ item: 'example', output: 'result', score: 0.8 }],
      };
      const tool = createGrpoTool(options);
      const frames: Frame[] = [];
      const done = new Promise<Frame>((resolve) =>
        tool.source.pipe({
          write(frame) {
            frames.push(frame);
            if (frame.type === 'TOOL_RESULT') resolve(frame);
          },
        }),
      );
      tool.sink.write({ type: 'TOOL_CALL', content: {} });
      const result = (await done).content as { experiences: Array<{ item?: string; output?: string }>; epochs: number; itemsProcessed: number };
      expect(frames.filter((f) => f.type === 'ERROR')).toEqual([]);
      expect(result).toMatchObject({ epochs: 1, itemsProcessed: 2 });
      expect(result.experiences).toContainEqual(expect.objectContaining({ item: 'example', output: 'result' }));
      await tool.close();

      // The key is the one sent: a wrong one is refused by the server, and said so in an ERROR frame.
      const refused = createGrpoTool({ ...options, apiKey: 'sk-wrong' });
      const error = new Promise<Frame>((resolve) => refused.source.pipe({ write: (frame) => frame.type === 'ERROR' && resolve(frame) }));
      refused.sink.write({ type: 'TOOL_CALL', content: {} });
      expect(((await error).content as { message: string }).message).toMatch(/401|key/i);
      await refused.close();
    } finally {
      toy.server.close();
    }
  });

  it("defaults to the tool's documented model, deepseek-v4-flash", async () => {
    const served = await startToyServer({ modelId: 'deepseek-v4-flash' });
    try {
      const tool = createGrpoTool({ baseURL: served.url, dataset: ['Sort: b a'], groupSize: 2, mode: 'exemplars' });
      const result = new Promise<Frame>((resolve) => tool.source.pipe({ write: (frame) => (frame.type === 'TOOL_RESULT' || frame.type === 'ERROR') && resolve(frame) }));
      tool.sink.write({ type: 'TOOL_CALL', content: {} });
      expect((await result).type).toBe('TOOL_RESULT');
      await tool.close();
    } finally {
      served.server.close();
    }
    expect(() => createGrpoTool({ apiKey: 'k', baseURL: 'not a url', dataset: ['x'] })).toThrow(/baseURL/);
  });
});

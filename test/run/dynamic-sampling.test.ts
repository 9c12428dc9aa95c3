/**
 * DAPO's dynamic sampling in the gradient loop on the bundled ONNX model (real runtime, the head
 * adapter's CPU engine): a group whose rewards all equal is sampled again from fresh seeds, at
 * most `maxResamples` times, and one still flat is left out of the update (zero advantages, not
 * in the trainer's batch); the step stats count both; the first sampling of every group is the
 * plain run's; a step where every group stays flat updates nothing; a resumed run resamples as
 * the uninterrupted one did.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gradientGrpo, resumeGradientGrpo, type GradientEvent, type GradientGrpoOptions } from '../../lib/grad.js';
import { InvalidInputError, MemoryStore, type StepRecord, type GradientStepPayload } from '../../lib/index.js';
import { computeAdvantages } from '../../lib/math.js';
import { firstLetter } from '../../lib/tasks.js';
import { bundledModelPath, loadOnnxPolicy, type OnnxPolicy } from '../../lib/onnx.js';

let policy: OnnxPolicy;
beforeAll(async () => {
  policy = await loadOnnxPolicy({ model: await bundledModelPath(), hiddenState: true });
});
afterAll(() => policy?.dispose());

/** 1 when the reply holds an "a": rare in 4 characters of the random model, so many groups are flat at 0. */
const hasA = { name: 'has-a', score: ({ text }: { text: string }) => (text.includes('a') ? 1 : 0) };

function options(extra: Partial<GradientGrpoOptions> = {}): GradientGrpoOptions {
  return { policy, dataset: firstLetter.dataset({ size: 8, seed: 3 }), rewards: [hasA], groupSize: 4, batchSize: 4, maxNewTokens: 4, seed: 5, ...extra };
}

const flat = (rewards: Array<number | null>) => rewards.every((r) => r === rewards[0]);

async function drive(run: ReturnType<typeof gradientGrpo>) {
  const events: GradientEvent[] = [];
  for await (const event of run) events.push(event);
  const result = await run.result();
  result.trainer.dispose();
  return { events, result };
}

describe('dynamic sampling', () => {
  it('resamples flat groups up to the bound, leaves the still-flat ones out of the update, and counts both per step', async () => {
    const store = new MemoryStore();
    const { events } = await drive(gradientGrpo(options({ store, runId: 'dynamic', dynamicSampling: { maxResamples: 2 } })));
    const steps = (await store.listSteps('dynamic')) as StepRecord<GradientStepPayload>[];
    expect(steps).toHaveLength(2);
    let resampled = 0;
    for (const step of steps) {
      for (const item of step.items) {
        const rewards = item.rollouts.map((r) => r.reward);
        const resamples = item.resamples ?? 0;
        expect(resamples).toBeLessThanOrEqual(2);
        // Resampling stops at the first group with a spread, or at the bound.
        if (resamples < 2) expect(flat(rewards)).toBe(false);
        if (flat(rewards)) expect(item.rollouts.every((r) => r.advantage === 0)).toBe(true);
        // Every sampling of the item was announced; the stored group is the last one.
        const samplings = events.filter((e) => e.type === 'rollouts' && e.step === step.step && e.item === item.index);
        expect(samplings).toHaveLength(resamples + 1);
        expect((samplings.at(-1) as { completions: Array<{ text: string }> }).completions.map((c) => c.text)).toEqual(item.rollouts.map((r) => r.text));
      }
      const flatItems = step.items.filter((item) => flat(item.rollouts.map((r) => r.reward)));
      const kept = step.items.filter((item) => !flat(item.rollouts.map((r) => r.reward)));
      expect(step.stats.droppedGroups).toBe(flatItems.length);
      expect(step.stats.resampledGroups).toBe(step.items.filter((i) => (i.resamples ?? 0) > 0).length);
      expect(step.stats.resamples).toBe(step.items.reduce((n, i) => n + (i.resamples ?? 0), 0));
      // The kept groups' advantages are those of the kept groups alone.
      if (kept.length > 0) {
        const expected = computeAdvantages(kept.flatMap((i) => i.rollouts.map((r) => r.rewards)), { groupSize: 4, scaleRewards: 'group' }).advantages;
        expect(kept.flatMap((i) => i.rollouts.map((r) => r.advantage))).toEqual(expected);
        expect(step.payload.training).toHaveLength(1);
      } else {
        expect(step.payload.training).toEqual([]);
      }
      resampled += step.stats.resampledGroups!;
    }
    // The seed and reward give both kinds of group: some rescued by resampling, some dropped.
    expect(resampled).toBeGreaterThan(0);
    expect(steps.flatMap((s) => s.items).some((i) => (i.resamples ?? 0) > 0 && !flat(i.rollouts.map((r) => r.reward)))).toBe(true);

    // Without dynamic sampling the run draws the same first samplings, and stores no counts.
    const plainStore = new MemoryStore();
    const plain = await drive(gradientGrpo(options({ store: plainStore, runId: 'plain' })));
    const first = (list: GradientEvent[]) => list.filter((e) => e.type === 'rollouts' && !('resample' in e) && e.step === 1).map((e) => (e as { completions: Array<{ text: string }> }).completions.map((c) => c.text));
    expect(first(events)).toEqual(first(plain.events));
    const [plainStep] = await plainStore.listSteps('plain');
    expect(plainStep.stats.droppedGroups).toBeUndefined();
    expect(plainStep.items.every((i) => i.resamples === undefined)).toBe(true);
  }, 120_000);

  it('updates nothing on a step whose every group stays flat', async () => {
    const always = { name: 'always', score: () => 1 };
    const store = new MemoryStore();
    const { result } = await drive(gradientGrpo(options({ store, runId: 'flat', rewards: [always], epochs: 1, dataset: firstLetter.dataset({ size: 4, seed: 1 }), dynamicSampling: { maxResamples: 1 } })));
    const [step] = (await store.listSteps('flat')) as StepRecord<GradientStepPayload>[];
    expect(step.stats).toMatchObject({ groups: 4, resampledGroups: 4, resamples: 4, droppedGroups: 4 });
    expect(step.payload.training).toEqual([]);
    expect(result.adapter.updates ?? 0).toBe(0);
  }, 120_000);

  it('resumes a run stopped mid-step into the groups and adapter of the uninterrupted run', async () => {
    const whole = new MemoryStore();
    const a = await drive(gradientGrpo(options({ store: whole, runId: 'whole', dynamicSampling: true })));
    const store = new MemoryStore();
    const abort = new AbortController();
    const first = gradientGrpo(options({ store, runId: 'cut', dynamicSampling: true, signal: abort.signal }));
    for await (const event of first) if (event.type === 'item-end' && event.step === 2) abort.abort();
    (await first.result()).trainer.dispose();
    const b = await drive(resumeGradientGrpo('cut', { policy, rewards: [hasA], store }));
    const texts = async (s: MemoryStore, id: string) => (await s.listSteps(id)).map((step) => [step.stats, step.items.map((i) => [i.resamples, i.rollouts.map((r) => r.text)])]);
    expect(await texts(store, 'cut')).toEqual(await texts(whole, 'whole'));
    expect({ ...b.result.adapter, createdAt: '' }).toEqual({ ...a.result.adapter, createdAt: '' });
  }, 180_000);

  it('refuses a bound that is not a small integer', () => {
    expect(() => gradientGrpo(options({ dynamicSampling: { maxResamples: -1 } }))).toThrow(InvalidInputError);
    expect(() => gradientGrpo(options({ dynamicSampling: { maxResamples: 1.5 } }))).toThrow(/dynamicSampling\.maxResamples/);
  });
});

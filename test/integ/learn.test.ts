/**
 * A session feeds the training-free critic step: `learnFromGroups` on groups told to a real
 * ask/tell session. The critic is the scripted model of test/tfgrpo/helpers (summaries, critiques,
 * operations, some malformed or hostile on purpose); its outputs are recorded once and replayed,
 * so the libraries compared below come from the same recorded critic outputs.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createSession,
  InvalidInputError,
  learnFromGroups,
  MemoryStore,
  recordingPolicy,
  replayPolicy,
  trainingFreeGrpo,
  type GroupRecord,
  type Policy,
  type PolicyRecording,
  type StepRecord,
  type TrainingFreeStepPayload,
} from '../../lib/index.js';
import { alphabetise } from '../../lib/tasks/index.js';
import { validateLibrary } from '../../lib/method.js';
import { scriptedPolicy } from '../tfgrpo/helpers/scripted-policy.js';

/** The scripted critic answering every request as if it had seed 0: its replies then depend on the prompt alone. */
function seedless(options: Parameters<typeof scriptedPolicy>[0] = {}): Policy {
  const inner = scriptedPolicy(options);
  return { ...inner, generateGroup: (o) => inner.generateGroup({ ...o, seed: 0 }) };
}

/** Tells `step`'s groups to a session as they were: the same prompt, completions, combined rewards and answer. */
async function tellStep(step: StepRecord, dataset: ReturnType<typeof alphabetise.dataset>): Promise<GroupRecord[]> {
  const session = createSession({ policy: scriptedPolicy() });
  for (const result of step.items) {
    const item = dataset[result.index];
    await session.tell({
      messages: item.messages,
      completions: result.rollouts.map((r) => ({ text: r.text, reward: r.reward })),
      meta: { answer: String(item.answer) },
    });
  }
  return session.groups({ told: true });
}

const dataset = alphabetise.dataset({ size: 6, seed: 2 });
let step: StepRecord<TrainingFreeStepPayload>;
let groups: GroupRecord[];
let recording: PolicyRecording;

beforeAll(async () => {
  // One loop step over the whole dataset, its critic answering regardless of seed.
  const store = new MemoryStore();
  const run = trainingFreeGrpo({ dataset, rewards: alphabetise.rewards, groupSize: 3, epochs: 1, batchSize: 6, policy: scriptedPolicy(), critic: seedless(), store, runId: 'loop' });
  await run.result();
  step = (await store.listSteps('loop'))[0] as StepRecord<TrainingFreeStepPayload>;
  groups = await tellStep(step, dataset);
  const recorder = recordingPolicy(seedless());
  await learnFromGroups({ critic: recorder, groups });
  recording = recorder.recording();
});

describe('learnFromGroups', () => {
  it('does what the loop does with the same groups: same critiques, merge, operations and library, byte for byte', async () => {
    expect(step.items.some((i) => i.skipped === 'zero-spread')).toBe(true);
    expect(step.payload.applied.length).toBeGreaterThan(0);
    const learned = await learnFromGroups({ critic: replayPolicy(recording), groups });
    expect(learned.step).toBe(1);
    expect(JSON.stringify(learned.library)).toBe(JSON.stringify(step.payload.library));
    expect(learned.merge).toEqual(step.payload.merge);
    expect(learned.proposed).toEqual(step.payload.proposed);
    expect(learned.applied).toEqual(step.payload.applied);
    expect(learned.skipped).toEqual(step.payload.skippedOperations);
    learned.groups.forEach((g, i) => {
      const item = step.items[i];
      expect(g.groupId).toBe(groups[i].id);
      expect(g.skipped).toBe(item.skipped);
      expect(g.critique).toEqual(item.critique);
      expect(g.groupUpdate).toEqual(item.groupUpdate);
      if (!item.skipped) expect(g.summaries).toEqual(item.rollouts.map((r) => r.summary));
    });
    const loopWarnings = [...step.items.flatMap((i) => i.warnings), ...step.warnings].map((w) => `${w.stage}: ${w.message}`);
    expect(learned.warnings.map((w) => `${w.stage}: ${w.message}`).sort()).toEqual(loopWarnings.sort());
    // The critic was capped at 2 lessons per group (the scripted one proposes 3).
    expect(learned.warnings.some((w) => w.stage === 'critique' && /only the first 2/.test(w.message))).toBe(true);
    expect(() => validateLibrary(learned.library)).not.toThrow();
  });

  it('updates a given library at the step after its latest, against its entries', async () => {
    const start = { nextId: 3, entries: [{ id: 'G2', text: 'Sort by the first letter, then the next.', createdStep: 4, updatedStep: 7 }], exemplars: [] };
    const critic = recordingPolicy(scriptedPolicy());
    const first = await learnFromGroups({ critic, groups, library: start, seed: 5 });
    expect(first.step).toBe(8);
    expect(first.library.entries.length).toBeGreaterThan(1);
    for (const entry of first.library.entries.filter((e) => e.id !== 'G2')) expect(entry.createdStep).toBe(8);
    const critiques = critic.recording().calls.filter((c) => c.request.messages?.at(-1)?.content.includes('Propose at most'));
    expect(critiques.every((c) => c.request.messages?.at(-1)?.content.includes('[G2] Sort by the first letter'))).toBe(true);
    // The reference answer is the group's meta.answer unless told otherwise.
    expect(critiques[0].request.messages?.at(-1)?.content).toContain(`Reference answer: ${groups[0].meta?.answer}`);
    // Replaying the recorded critic gives the same library again.
    const again = await learnFromGroups({ critic: replayPolicy(critic.recording()), groups, library: start, seed: 5 });
    expect(JSON.stringify(again.library)).toBe(JSON.stringify(first.library));
    const progress: number[] = [];
    await learnFromGroups({ critic: replayPolicy(critic.recording()), groups, library: start, seed: 5, onProgress: (p) => progress.push(p.groupsDone) });
    expect(progress).toEqual(groups.map((_, i) => i + 1));
  });

  it('never lets a critic that writes only garbage touch the library; every skip is a warning', async () => {
    const start = { nextId: 1, entries: [{ id: 'G0', text: 'Keep the words lowercase.', createdStep: 0, updatedStep: 0 }], exemplars: [] };
    const learned = await learnFromGroups({ critic: scriptedPolicy({ hostile: true }), groups, library: start });
    expect(learned.library).toEqual(start);
    expect(learned.proposed).toEqual([]);
    const critiqued = learned.groups.filter((g) => !g.skipped);
    expect(critiqued.length).toBeGreaterThan(0);
    for (const g of critiqued) {
      expect(g.critique?.outputs).toHaveLength(2);
      expect(g.critique?.parsed).toBeUndefined();
      expect(learned.warnings.filter((w) => w.groupId === g.groupId && w.stage === 'critique')).toHaveLength(1);
    }
  });

  it('without ground truth critiques every group and hides rewards and answers', async () => {
    const critic = recordingPolicy(scriptedPolicy());
    const learned = await learnFromGroups({ critic, groups, givenGroundTruth: false, lessonsPerGroup: 1 });
    expect(learned.groups.every((g) => g.skipped === undefined)).toBe(true);
    const critiques = critic.recording().calls.map((c) => c.request.messages?.at(-1)?.content ?? '').filter((t) => t.includes('Propose at most 1 new lessons'));
    expect(critiques).toHaveLength(groups.length);
    for (const text of critiques) {
      expect(text).toContain('Reference answer: (not given)');
      expect(text).toMatch(/Attempt 1 \(reward \(not given\)\)/);
    }
  });

  it('refuses untold groups and bad options with typed errors, before any critic call', async () => {
    const session = createSession({ policy: scriptedPolicy() });
    const asked = await session.ask({ messages: dataset[0].messages, n: 2 });
    const untold = await session.group(asked.groupId);
    const critic = recordingPolicy(scriptedPolicy());
    const cases: Array<[Parameters<typeof learnFromGroups>[0], string]> = [
      [{ critic, groups: [groups[0], untold] }, 'groups[1]'],
      [{ critic, groups: 'all' as never }, 'groups'],
      [{ critic: {} as never, groups }, 'critic'],
      [{ critic, groups, lessonsPerGroup: 0 }, 'lessonsPerGroup'],
      [{ critic, groups, templates: { critique: 'no placeholder' } }, 'templates.critique'],
      [{ critic, groups, templates: { prompt: '{{experiences}} {{prompt}}' } as never }, 'templates.prompt'],
      [{ critic, groups, library: 7 }, 'initialExperiences'],
    ];
    for (const [options, argument] of cases) {
      const error = await learnFromGroups(options).then(() => undefined, (e: unknown) => e);
      expect(error, argument).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).argument).toBe(argument);
    }
    expect(critic.recording().calls).toEqual([]);
    const controller = new AbortController();
    controller.abort();
    await expect(learnFromGroups({ critic, groups, signal: controller.signal })).rejects.toMatchObject({ code: 'Aborted' });
  });
});

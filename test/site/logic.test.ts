/**
 * The playground's plain modules on a real run: a Training-Free GRPO run of the toy policy (a
 * deterministic character-level model) on the alphabetise task in a MemoryStore, read back as
 * the UI reads it, then derived into what the panels draw and the files the user exports.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, runGroups, trainingFreeGrpo, type RunBundle, type StepRecord } from '../../lib/index.js';
import { alphabetise } from '../../lib/tasks/index.js';
import { payloadOf } from '../../lib/method.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { countDiff, diffLibraries } from '../../site/lib/diff.js';
import { EtaClock, evaluationsDue, formatDuration, RunEta } from '../../site/lib/eta.js';
import { runJsonl, libraryJson } from '../../site/lib/export.js';
import { tokenShade, SHADE_LEGEND } from '../../site/lib/shading.js';
import { tokenPieces } from '../../site/lib/tokens.js';
import { asConversational, rawPromptCount, rewardsOf } from '../../site/lib/tasks.js';
import { plural } from '../../site/lib/plural.js';
import { runPlan } from '../../site/lib/setup.js';
import { WorkerRatings } from '../../site/lib/worker-ratings.js';
import { streamingPolicy, type GroupStream } from '../../site/lib/streaming.js';
import { displayStatus, epochRows, flatSummary, groupsAt, instructiveOrder, lastStepShown, libraryAfter, noSignal, stepSeries, totalSteps } from '../../site/lib/view.js';
import { rewardWindow } from '../../site/lib/charts.js';

/** A training-free step's payload (its library and operations). */
const tf = (step: StepRecord) => payloadOf(step, 'training-free')!;

let bundle: RunBundle;

beforeAll(async () => {
  const store = new MemoryStore();
  const run = trainingFreeGrpo({
    policy: createToyPolicy(),
    dataset: alphabetise.dataset({ size: 3 }),
    rewards: alphabetise.rewards,
    mode: 'exemplars',
    task: 'alphabetise',
    store,
    groupSize: 3,
    epochs: 2,
    batchSize: 2,
    maxNewTokens: 12,
  });
  await run.result();
  bundle = await store.readBundle(run.runId);
});

describe('run view', () => {
  it('lays out steps and epochs as the loop scheduled them', () => {
    // 3 items in batches of 2: steps of 2 and 1 item, twice.
    expect(totalSteps(bundle)).toBe(4);
    expect(lastStepShown(bundle)).toBe(4);
    expect(groupsAt(bundle, 2).map((g) => g.position)).toEqual([0]);
    const rows = epochRows(bundle);
    expect(rows.map((r) => [r.epoch, r.groups, r.partial])).toEqual([
      [1, 3, false],
      [2, 3, false],
    ]);
    expect(rows[1].librarySize).toBe(tf(bundle.steps[3]).library.exemplars.length);
  });

  it('gives the charts one point per committed step, with the band around the mean', () => {
    const s = stepSeries(bundle);
    expect(s.step).toEqual([1, 2, 3, 4]);
    for (let i = 0; i < 4; i++) {
      const { meanReward, stdReward } = bundle.steps[i].stats;
      expect(s.mean[i]).toBe(meanReward);
      expect(s.high[i]! - s.low[i]!).toBeCloseTo(2 * (stdReward ?? 0), 12);
      expect(s.librarySize[i]).toBe(tf(bundle.steps[i]).library.exemplars.length + tf(bundle.steps[i]).library.entries.length);
      expect(s.added[i]).toBe(tf(bundle.steps[i]).applied.filter((a) => a.operation === 'ADD').length);
    }
  });

  it('shows a stored run that no loop drives as interrupted', () => {
    const running = { ...bundle.run, status: 'running' as const };
    expect(displayStatus(running, null)).toBe('interrupted');
    expect(displayStatus(running, { runId: bundle.run.id, paused: true })).toBe('paused');
    expect(displayStatus({ ...bundle.run, status: 'aborted' }, null)).toBe('cancelled');
  });

  it('resumes with the rewards the run was started with', () => {
    expect(rewardsOf(bundle.run.config).map((r) => r.name)).toEqual(['exact', 'format', 'similarity']);
    const upload = { ...bundle.run.config, task: undefined, rewards: [{ name: 'similarity', weight: 2 }] };
    expect(rewardsOf(upload).map((r) => [r.name, r.weight])).toEqual([['similarity', 2]]);
    expect(() => rewardsOf({ ...upload, rewards: [{ name: 'mine', weight: 1 }] })).toThrow(/does not know/);
  });
});

describe('library diff', () => {
  it('marks what a step added, updated and deleted', () => {
    const before = { nextId: 3, entries: [{ id: 'G0', text: 'a', createdStep: 0, updatedStep: 0 }, { id: 'G1', text: 'b', createdStep: 0, updatedStep: 0 }], exemplars: [] };
    const after = { nextId: 4, entries: [{ id: 'G1', text: 'b2', createdStep: 0, updatedStep: 1 }, { id: 'G3', text: 'c', createdStep: 1, updatedStep: 1 }], exemplars: [] };
    const rows = diffLibraries(before, after);
    expect(rows.map((r) => [r.id, r.status, r.previous])).toEqual([
      ['G1', 'updated', 'b'],
      ['G3', 'added', undefined],
      ['G0', 'deleted', 'a'],
    ]);
    expect(countDiff(rows)).toEqual({ added: 1, updated: 1, deleted: 1 });
  });

  it('agrees with the operations the run applied', () => {
    for (const step of bundle.steps) {
      const counts = countDiff(diffLibraries(libraryAfter(bundle, step.step - 1), libraryAfter(bundle, step.step)));
      const applied = (kind: string) => tf(step).applied.filter((a) => a.operation === kind).length;
      expect(counts.added).toBe(applied('ADD'));
      expect(counts.deleted).toBe(applied('DELETE'));
    }
  });
});

describe('export', () => {
  it('writes one TRL conversational line per completion, with reward, advantage, group and completion id', () => {
    const lines = runJsonl(bundle).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(2 * 3 * 3);
    const first = bundle.steps[0].items[0];
    expect(lines[0]).toEqual({
      prompt: first.prompt.messages,
      completion: [{ role: 'assistant', content: first.rollouts[0].text }],
      reward: first.rollouts[0].reward,
      advantage: first.rollouts[0].advantage,
      group_id: `${bundle.run.id}:1:${first.index}`,
      completion_id: `${bundle.run.id}:1:${first.index}:0`,
    });
    expect(new Set(lines.map((l) => l.group_id)).size).toBe(6);
    expect(new Set(lines.map((l) => l.completion_id)).size).toBe(lines.length);
  });

  it('includes the finished items of a step in progress', () => {
    const partial = { ...bundle, steps: bundle.steps.slice(0, 1), pending: bundle.steps[1].items };
    expect(runGroups(partial)).toHaveLength(3);
  });

  it('writes the library as JSON that names its run and step', () => {
    const doc = JSON.parse(libraryJson(libraryAfter(bundle, 2), bundle.run.id, 2));
    expect(doc).toMatchObject({ format: 'webgrpo.library', runId: bundle.run.id, step: 2 });
    expect(doc.library).toEqual(tf(bundle.steps[1]).library);
  });
});

describe('token pieces', () => {
  const vocab = ['Hel', 'lo', ' wor', 'ld'];
  const charDecode = async (ids: number[]) => ids.map((id) => vocab[id]).join('');

  it('decodes token by token when that rebuilds the text', async () => {
    const pieces = await tokenPieces(charDecode, [0, 1, 2, 3], [-0.1, -0.2, -0.3, -0.4]);
    expect(pieces.map((p) => p.text)).toEqual(['Hel', 'lo', ' wor', 'ld']);
    expect(pieces.map((p) => p.logprob)).toEqual([-0.1, -0.2, -0.3, -0.4]);
  });

  it('keeps the bytes of one character together (byte-level BPE)', async () => {
    // "é" is two UTF-8 bytes, one token each; alone, each decodes to U+FFFD.
    const bytes = [0x61, 0xc3, 0xa9, 0x62];
    const decode = async (ids: number[]) => new TextDecoder().decode(new Uint8Array(ids.map((i) => bytes[i])));
    const pieces = await tokenPieces(decode, [0, 1, 2, 3], [-1, -2, -3, -4]);
    expect(pieces.map((p) => p.text)).toEqual(['a', 'é', 'b']);
    expect(pieces.map((p) => [p.logprob, p.tokens])).toEqual([
      [-1, 1],
      [-5, 2],
      [-4, 1],
    ]);
  });
});

describe('small helpers', () => {
  it('estimates time left from the run\'s own steps and evaluations, not its first slow items nor its pauses', () => {
    const eta = new EtaClock();
    eta.start(0);
    // The base model's held-out answers take 6 s before the first step.
    eta.evaluated(6000);
    eta.stepStart(6000);
    expect(eta.remainingMs(4, 1, 7000)).toBeNull();
    // Step 1 (the engine's first load in it) takes 4 s, step 2 takes 2 s, 10 s of pause in between not counted.
    eta.stepEnd(10_000, false);
    eta.pause(10_000);
    eta.start(20_000);
    eta.stepStart(20_000);
    eta.stepEnd(22_000, true);
    expect(eta.stepMs()).toBe(2000);
    // An epoch ended: its evaluation takes 3 s, then step 3 is 1 s in with 2 steps and 1 evaluation to go.
    eta.evaluated(25_000);
    eta.stepStart(25_000);
    expect(eta.remainingMs(2, 1, 26_000)).toBe(2 * 2000 - 1000 + (6000 + 3000) / 2);
    // A step running past the mean counts as at its mean, never below zero left.
    expect(eta.remainingMs(1, 0, 40_000)).toBe(0);
    expect(formatDuration(200_000)).toBe('3 min 20 s');
  });

  it('reads a run\'s events for its time left: steps committed, evaluations done and to come', () => {
    const eta = new RunEta();
    const progress = (step: number) => ({ step, totalSteps: 4, epochs: 2 });
    eta.observe({ type: 'run-start', progress: progress(1) }, 0);
    eta.observe({ type: 'eval', epoch: 0, step: 0, progress: progress(1) }, 4000);
    expect(eta.remainingMs(1, 4000)).toBeNull();
    for (const [step, start, end] of [[1, 4000, 7000], [2, 7000, 9000]]) {
      eta.observe({ type: 'step-start', step, progress: progress(step) }, start);
      eta.observe({ type: 'step-end', step, progress: progress(step) }, end);
    }
    // Step 2 ended epoch 1 (2 steps per epoch): its evaluation takes 2 s.
    eta.observe({ type: 'eval', epoch: 1, step: 2, progress: progress(2) }, 11_000);
    // 2 steps at 2 s (the first step, which loads the engine, left out) and 1 evaluation at (4 + 2) / 2 s.
    expect(eta.remainingMs(1, 11_000)).toBe(2 * 2000 + 3000);
    expect(eta.remainingMs(undefined, 11_000)).toBe(4000);
  });

  it('counts the held-out evaluations to come as the loop schedules them', () => {
    expect(evaluationsDue(1, -1, 2)).toBe(3); // before the first step and after each of two epochs
    expect(evaluationsDue(1, 0, 2)).toBe(2);
    expect(evaluationsDue(3, 0, 4)).toBe(2); // after epoch 3, and after the last
    expect(evaluationsDue(1, 2, 2)).toBe(0);
  });

  it('shades unlikely tokens more, and leaves likely ones plain', () => {
    expect(tokenShade(0)).toBe('transparent');
    expect(tokenShade(Number.NaN)).toBe('transparent');
    const alpha = (lp: number) => Number(/, ([\d.]+)\)$/.exec(tokenShade(lp))?.[1] ?? 0);
    expect(alpha(Math.log(0.01))).toBeGreaterThan(alpha(Math.log(0.5)));
    expect(SHADE_LEGEND.map((s) => s.label)).toEqual(['90%', '50%', '10%', '1%', '0.1%']);
  });
});

describe('streaming policy', () => {
  it('shows each row growing, then the same group the policy alone returns', async () => {
    const updates: Array<GroupStream | null> = [];
    const policy = streamingPolicy(createToyPolicy({ stepDelayMs: 2 }), (s) => updates.push(s), { intervalMs: 5 });
    const options = { prompt: 'Sort: pear apple', groupSize: 3, maxNewTokens: 24, temperature: 1, seed: 7 };
    const streamed = await policy.generateGroup(options);
    expect(streamed).toEqual(await createToyPolicy().generateGroup(options));
    expect(updates[0]).toEqual({ kind: 'group', rows: ['', '', ''], tokens: [0, 0, 0] });
    expect(updates[updates.length - 1]).toBeNull();
    const growing = updates.slice(1, -1) as GroupStream[];
    expect(growing.length).toBeGreaterThan(1);
    for (const update of growing) {
      update.rows.forEach((text, row) => expect(streamed.completions[row].text.startsWith(text)).toBe(true));
    }
    expect(policy.info).toEqual(createToyPolicy().info);
  });

  it('takes a one-row call for the critic only when the method has one (the router samples variants one row at a time)', async () => {
    const kinds = async (hasCritic: boolean) => {
      const seen: string[] = [];
      const policy = streamingPolicy(createToyPolicy(), (s) => s && seen.push(s.kind), { hasCritic });
      await policy.generateGroup({ prompt: 'Sort: pear apple', groupSize: 1, maxNewTokens: 4, seed: 1 });
      return [...new Set(seen)];
    };
    expect(await kinds(false)).toEqual(['group']);
    expect(await kinds(true)).toEqual(['critic']);
  });
});

describe('group chart', () => {
  it('spans a group of tied rewards one reward unit, and a narrow spread at least 0.1, so its axis labels stay short', () => {
    expect(rewardWindow(1.5, 1.5)).toEqual({ lo: 1, hi: 2 });
    const narrow = rewardWindow(0.5, 0.51);
    expect(narrow.lo).toBeCloseTo(0.445, 12);
    expect(narrow.hi).toBeCloseTo(0.565, 12);
    const spread = rewardWindow(0, 1);
    expect(spread.lo).toBeCloseTo(-0.1, 12);
    expect(spread.hi).toBeCloseTo(1.1, 12);
  });
});

describe('the first run', () => {
  it('is LoRA GRPO on the bundled sorter model, at a task it can learn there, from settings the form accepts', async () => {
    const [{ bundledModelPath, ONNX_MODELS }, { learnableTasks, choiceOf, suggestedSettings }, { INITIAL_SETUP, SKILL_LORA_DEFAULTS, setupProblems }] = await Promise.all([
      import('../../site/lib/models.js'),
      import('../../site/lib/methods.js'),
      import('../../site/lib/setup.js'),
    ]);
    const model = ONNX_MODELS[0];
    expect(model).toMatchObject({ id: 'sorter', source: 'bundled', folder: 'webgrpo-sorter', skillTasks: true });
    // The skill model keeps its place and its skill settings; so does every loader (same architecture and tokenizer).
    expect(ONNX_MODELS.find((m) => m.id === 'skill')).toMatchObject({ folder: 'webgrpo-skill', skillTasks: true });
    const method = choiceOf(INITIAL_SETUP.method);
    expect(method.method.trains).toBeDefined();
    expect(learnableTasks(method, model.id)?.[0]).toBe(INITIAL_SETUP.task);
    expect(method.skillDefaults).toBe(SKILL_LORA_DEFAULTS);
    // The first run's settings are the ones the page applies for its task, as picking it again would.
    expect(INITIAL_SETUP).toMatchObject(suggestedSettings(method, model.id, INITIAL_SETUP.task));
    expect(INITIAL_SETUP.task).toBe('sort-words');
    // The head adapter still starts on copy-format, which it lifts (it does not lift sort-words).
    expect(learnableTasks(choiceOf('gradient'), model.id)?.[0]).toBe('copy-format');
    expect(setupProblems(INITIAL_SETUP, method.settings)).toEqual({});
    // webgrpo-tiny stays for mechanics: its tasks are the token-level ones.
    expect(learnableTasks(method, 'tiny')).toEqual(['digits', 'shout']);
    expect(ONNX_MODELS.find((m) => m.id === 'tiny')?.folder).toBe('webgrpo-tiny');
    expect(learnableTasks(choiceOf('exemplars'), 'skill')).toBeUndefined();
    expect(bundledModelPath(model.folder as string, 'http://127.0.0.1:5173/sub/')).toBe('/sub/models/webgrpo-sorter/');
    expect(learnableTasks(method, 'skill')).toEqual(learnableTasks(method, model.id));
    expect(suggestedSettings(method, 'skill', INITIAL_SETUP.task)).toEqual(suggestedSettings(method, model.id, INITIAL_SETUP.task));
  });
});

describe('the settings a method suggests', () => {
  it('are LoRA\'s sort-words ones on the skill model for sort-words (more steps, answers uncut), its skill ones on the other skill tasks, its own on the tiny model', async () => {
    const [{ choiceOf, suggestedSettings }, { SKILL_LORA_DEFAULTS, SKILL_LORA_SORT_DEFAULTS, setupProblems, INITIAL_SETUP }] = await Promise.all([import('../../site/lib/methods.js'), import('../../site/lib/setup.js')]);
    const lora = choiceOf('lora');
    expect(suggestedSettings(lora, 'skill', 'sort-words')).toEqual(SKILL_LORA_SORT_DEFAULTS);
    expect(suggestedSettings(lora, 'skill', 'copy-format')).toEqual(SKILL_LORA_DEFAULTS);
    expect(suggestedSettings(lora, 'tiny', 'sort-words')).toBe(lora.defaults);
    // The longest sort-words answer (four words of four letters) fits the suggested reply length.
    expect(SKILL_LORA_SORT_DEFAULTS.maxNewTokens).toBeGreaterThanOrEqual('bark cake coin duck'.length);
    expect(setupProblems({ ...INITIAL_SETUP, task: 'sort-words', ...SKILL_LORA_SORT_DEFAULTS }, lora.settings)).toEqual({});
    expect(suggestedSettings(choiceOf('exemplars'), 'skill', 'sort-words')).toBe(choiceOf('exemplars').defaults);
    // On the reader, exemplars and lessons run as BENCHMARKS "exemplars" measures them (each prompt
    // shown its closest experience, lessons one problem per step); elsewhere the whole library.
    const exemplars = choiceOf('exemplars');
    expect(suggestedSettings(exemplars, 'reader', 'named-format')).toMatchObject({ items: 48, groupSize: 8, batchSize: 4, temperature: 1, maxNewTokens: 24, retrieve: 1, maxExemplars: 24 });
    expect(suggestedSettings(choiceOf('lessons'), 'reader', 'named-format')).toMatchObject({ batchSize: 1, retrieve: 1 });
    expect(suggestedSettings(exemplars, 'tiny', 'digits')).toMatchObject({ retrieve: 0, maxExemplars: 8 });
    expect(setupProblems({ ...INITIAL_SETUP, ...suggestedSettings(exemplars, 'reader', 'named-format') }, exemplars.settings)).toEqual({});
    expect(setupProblems({ ...INITIAL_SETUP, retrieve: -1, maxExemplars: 0 }, exemplars.settings)).toEqual({
      retrieve: 'Experiences per prompt: -1 is not a whole number from 0 to 64.',
      maxExemplars: 'Exemplars kept: 0 is not a whole number from 1 to 256.',
    });
    expect(suggestedSettings(lora, 'reader', 'named-format')).toBe(lora.defaults);
  });
});

describe('the groups of a step', () => {
  it('come widest reward spread first and those with no signal last, ties in batch order', () => {
    const group = (position: number, spread: number) => ({ ...bundle.steps[0].items[0], position, stats: { scorable: 2, mean: 0.5, std: spread / 2, spread } });
    const ordered = instructiveOrder([group(0, 0), group(1, 0.5), group(2, 1), group(3, 0.5), group(4, 0)]);
    expect(ordered.map((g) => g.position)).toEqual([2, 1, 3, 0, 4]);
    expect(ordered.map(noSignal)).toEqual([false, false, false, true, true]);
  });

  it('sum up a group with no signal in one line: its one answer, or how many distinct, and the reward they tied at', () => {
    const item = bundle.steps[0].items[0];
    const tied = (texts: string[]) => ({ ...item, rollouts: texts.map((text) => ({ ...item.rollouts[0], text, reward: 1, advantage: 0 })), stats: { scorable: texts.length, mean: 1, std: 0, spread: 0 } });
    expect(flatSummary(tied(['=log=', '=log=', '=log=']))).toBe('No signal: all 3 answers the same, “=log=”, every reward 1.000, every advantage 0.');
    expect(flatSummary(tied(['a', 'b', 'a', 'c']))).toBe('No signal: 4 answers (3 distinct), every reward 1.000, every advantage 0.');
    // Model output is untrusted: one line, clipped.
    expect(flatSummary(tied([`x\n${'y'.repeat(100)}`, `x\n${'y'.repeat(100)}`]))).toMatch(/“x y{57}…”/);
  });
});

describe('the run summary', () => {
  it('counts the groups and steps the loop runs, a short file\'s items rather than Prompts', () => {
    // Twelve items with Prompts at 64: the run takes the twelve, in two steps per epoch of 8.
    expect(runPlan({ items: 64, epochs: 2, batchSize: 8 }, 12)).toEqual({ prompts: 12, perStep: 8, groups: 24, steps: 4 });
    expect(runPlan({ items: 64, epochs: 2, batchSize: 8 })).toEqual({ prompts: 64, perStep: 8, groups: 128, steps: 16 });
    expect(runPlan({ items: 3, epochs: 1, batchSize: 8 }, 10)).toEqual({ prompts: 3, perStep: 3, groups: 3, steps: 1 });
  });

  it('agrees a count with its noun', () => {
    expect([plural(0, 'lesson'), plural(1, 'exemplar'), plural(2, 'exemplar')]).toEqual(['0 lessons', '1 exemplar', '2 exemplars']);
  });
});

describe('plain prompts and the chat template', () => {
  it('turns TRL\'s standard form into its conversational one, item by item, keeping answers and ids', () => {
    const items = [{ prompt: 'Sort: b a', answer: 'a b', id: 'x' }, { messages: [{ role: 'system' as const, content: 'Be brief.' }, { role: 'user' as const, content: 'Hi' }] }];
    expect(rawPromptCount(items)).toBe(1);
    const converted = asConversational(items);
    expect(converted).toEqual([{ messages: [{ role: 'user', content: 'Sort: b a' }], answer: 'a b', id: 'x' }, items[1]]);
    expect(rawPromptCount(converted)).toBe(0);
  });
});

describe('ratings for a run in the model\'s worker', () => {
  it('scores each named completion with the rating the page sent, before or after the loop asks, and stops waiting on cancel', async () => {
    const ratings = new WorkerRatings();
    const completions = bundle.steps[0].items[0].rollouts.slice(0, 2).map((r) => ({ text: r.text, tokenIds: r.tokenIds, logprobs: r.logprobs, finishReason: r.finishReason }));
    ratings.name('run-1', 1, 0, completions);
    const controller = new AbortController();
    const reward = ratings.reward(controller.signal);
    const score = (row: number) => reward.score({ text: completions[row].text, completion: completions[row], item: {}, prompt: { prompt: 'p' }, row });
    // Rated before the loop asks: kept. Asked before it is rated: waits for it.
    ratings.receive({ webgrpo: 'rating', runId: 'run-1', step: 1, item: 0, row: 0, reward: 0.75 });
    expect(await score(0)).toBe(0.75);
    const waiting = score(1);
    ratings.receive({ webgrpo: 'rating', runId: 'run-2', step: 1, item: 0, row: 1, reward: 1 }); // another run's
    ratings.receive({ webgrpo: 'rating', runId: 'run-1', step: 1, item: 0, row: 1, reward: 0.25 });
    expect(await waiting).toBe(0.25);
    // A completion never shown to the person gets no rating: it is unscorable, not a wait forever.
    expect(await reward.score({ text: 'x', completion: { ...completions[0] }, item: {}, prompt: { prompt: 'p' }, row: 0 })).toBeNull();
    ratings.name('run-1', 2, 0, completions);
    const cancelled = score(0);
    controller.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'Aborted' });
  });
});

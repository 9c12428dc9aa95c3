/**
 * A stored Training-Free GRPO run as an export source: `runGroups(bundle)` and `toJsonl(bundle)`.
 * The runs are the loop's own, on recorded model outputs (the scripted model of test/tfgrpo/helpers,
 * recorded once and replayed), so every number below is what a real run stores.
 */
import 'fake-indexeddb/auto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  exportRun,
  InvalidInputError,
  jsonlLines,
  MemoryStore,
  replayPolicy,
  runGroups,
  toJsonl,
  trainingFreeGrpo,
  type RunBundle,
  type TrainingFreeEvent,
} from '../../lib/index.js';
import { openFileStore } from '../../lib/node.js';
import { checkTrlPromptCompletion } from '../export/trl-format.js';
import { recordReference, standardShape, type Reference } from '../tfgrpo/helpers/fixture.js';

let reference: Reference;
let dir: string;
beforeAll(async () => {
  reference = await recordReference(standardShape());
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-run-export-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('runGroups', () => {
  it('gives one group per item result of every step, with stable ids and the prompt the model saw', () => {
    const bundle = reference.bundle;
    const groups = runGroups(bundle);
    const results = bundle.steps.flatMap((s) => s.items);
    expect(groups).toHaveLength(12);
    groups.forEach((group, i) => {
      const result = results[i];
      expect(group.id).toBe(`reference:${result.step}:${result.index}`);
      // The prompt as stored with the item: the library's experiences rendered into it.
      expect(group.messages).toEqual(result.prompt.messages);
      expect(group.prompt).toBeUndefined();
      expect(group.completions).toHaveLength(4);
      group.completions.forEach((c, row) => {
        const rollout = result.rollouts[row];
        expect(c).toEqual({
          id: `reference:${result.step}:${result.index}:${row}`,
          text: rollout.text,
          tokenIds: rollout.tokenIds,
          logprobs: rollout.logprobs,
          reward: rollout.reward,
          advantage: rollout.advantage,
        });
      });
    });
    // Later steps carry lessons in their prompts; the export keeps them.
    expect(groups.at(-1)?.messages?.at(-1)?.content).toMatch(/^\[G\d+\] /m);
  });

  it('includes the finished items of the step in progress, in batch order, after the committed steps', async () => {
    const store = new MemoryStore();
    const controller = new AbortController();
    const run = trainingFreeGrpo({ ...standardShape(), policy: replayPolicy(reference.recording), store, runId: 'cut', signal: controller.signal });
    let ended = 0;
    for await (const event of run as AsyncIterable<TrainingFreeEvent>) {
      if (event.type === 'item-end' && event.step === 2 && ++ended === 2) controller.abort();
    }
    const bundle = await store.readBundle('cut');
    expect(bundle.steps).toHaveLength(1);
    expect(bundle.pending).toHaveLength(2);
    // Whatever order a store hands pending items back in, the export is in batch order.
    const shuffled: RunBundle = { ...bundle, pending: [...bundle.pending].reverse() };
    const ids = runGroups(shuffled).map((g) => g.id);
    const expected = [...bundle.steps[0].items, ...[...bundle.pending].sort((a, b) => a.position - b.position)].map((r) => `cut:${r.step}:${r.index}`);
    expect(ids).toEqual(expected);
    expect(ids.slice(3)).toEqual(reference.bundle.steps[1].items.slice(0, 2).map((r) => `cut:2:${r.index}`));
  });

  it('rejects what is not a run', () => {
    expect(() => runGroups({ run: {} } as never)).toThrow(InvalidInputError);
  });
});

describe('toJsonl(run)', () => {
  it('takes a stored run (a bundle or a run export) directly: one TRL line per completion', async () => {
    const include = ['reward', 'advantage', 'groupId', 'completionId', 'tokenIds', 'logprobs'] as const;
    const jsonl = toJsonl(reference.bundle, { format: 'conversational', include });
    expect(jsonl).toBe(toJsonl(runGroups(reference.bundle), { format: 'conversational', include }));
    const { format, rows } = checkTrlPromptCompletion(jsonl);
    expect(format).toBe('conversational');
    expect(rows).toHaveLength(48);
    const rollouts = reference.bundle.steps.flatMap((s) => s.items.flatMap((r) => r.rollouts.map((rollout, row) => ({ r, rollout, row }))));
    rows.forEach((line, i) => {
      const { r, rollout, row } = rollouts[i];
      expect(line.prompt).toEqual(r.prompt.messages);
      expect(line.completion).toEqual([{ role: 'assistant', content: rollout.text }]);
      expect(line.reward).toBe(rollout.reward);
      expect(line.advantage).toBe(rollout.advantage);
      expect(line.group_id).toBe(`reference:${r.step}:${r.index}`);
      expect(line.completion_id).toBe(`reference:${r.step}:${r.index}:${row}`);
      expect(line.token_ids).toEqual(rollout.tokenIds);
      expect(line.logprobs).toEqual(rollout.logprobs);
    });

    // The same run read back from the file store, as `exportRun` writes it.
    const files = await openFileStore(dir);
    await files.writeBundle(reference.bundle);
    const exported = JSON.parse(JSON.stringify(await exportRun(files, 'reference')));
    expect([...jsonlLines(exported, { format: 'conversational', include })].join('\n') + '\n').toBe(jsonl);
    // A chat run has no rendered prompt text, so the standard format refuses it with advice.
    expect(() => toJsonl(reference.bundle)).toThrow(/format 'conversational'/);
  });

  it('writes the standard format for a run on raw-text prompts', async () => {
    const dataset = standardShape().dataset.map((item) => ({ prompt: item.messages?.[0].content ?? '', answer: item.answer }));
    const raw = await recordReference(standardShape({ dataset, epochs: 1 }));
    const { format, rows } = checkTrlPromptCompletion(toJsonl(raw.bundle, { include: ['reward'] }));
    expect(format).toBe('standard');
    const results = raw.bundle.steps.flatMap((s) => s.items);
    expect(rows).toHaveLength(results.length * 4);
    expect(rows[0]).toEqual({ prompt: results[0].prompt.prompt, completion: results[0].rollouts[0].text, reward: results[0].rollouts[0].reward });
  });
});

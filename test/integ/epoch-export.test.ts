/**
 * Export after every epoch (training data written out as training goes on): the driver's `onEpoch` hook and `webgrpo train --export-jsonl`.
 * Every run replays recorded model outputs (the scripted model of test/tfgrpo/helpers, recorded once
 * in `recordReference`), so interrupted and whole runs see the same outputs.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as trainCli, type TrainIo } from '../../lib/cli/train.js';
import {
  InvalidInputError,
  MemoryStore,
  replayPolicy,
  resumeTrainingFreeGrpo,
  trainingFreeGrpo,
  type EpochExport,
  type TrainingFreeEvent,
} from '../../lib/index.js';
import { itemResultGroup } from '../../lib/method.js';
import { openFileStore } from '../../lib/node.js';
import { checkTrlPromptCompletion } from '../export/trl-format.js';
import { recordReference, standardShape, type Reference } from '../tfgrpo/helpers/fixture.js';
import { scriptedPolicy } from '../tfgrpo/helpers/scripted-policy.js';

let reference: Reference;
let dir: string;
beforeAll(async () => {
  reference = await recordReference(standardShape());
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-epoch-export-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The groups of `epoch` in the uninterrupted reference run. */
function referenceEpoch(epoch: number) {
  return reference.bundle.steps.filter((s) => s.epoch === epoch).flatMap((s) => s.items.map((r) => itemResultGroup('run', r)));
}

describe('onEpoch', () => {
  it('hands over every group of each epoch once, after the epoch, before its epoch-end event', async () => {
    const calls: EpochExport[] = [];
    const order: string[] = [];
    const run = trainingFreeGrpo({
      ...standardShape(),
      policy: replayPolicy(reference.recording),
      runId: 'run',
      onEpoch: async (epoch) => {
        calls.push(epoch);
        order.push(`hook ${epoch.epoch}`);
      },
    });
    for await (const event of run) if (event.type === 'epoch-end') order.push(`event ${event.epoch}`);
    expect(order).toEqual(['hook 1', 'event 1', 'hook 2', 'event 2']);
    expect(calls.map((c) => c.epoch)).toEqual([1, 2]);
    expect(calls[0].groups).toEqual(referenceEpoch(1));
    expect(calls[1].groups).toEqual(referenceEpoch(2));
    expect(calls[1].groups.map((g) => g.id)).toEqual(reference.bundle.steps.slice(2).flatMap((s) => s.items.map((r) => `run:${s.step}:${r.index}`)));
  });

  it('after a resume mid-epoch still exports all of that epoch, exactly once, and no earlier epoch again', async () => {
    const store = new MemoryStore();
    const shape = standardShape();
    const first: EpochExport[] = [];
    const controller = new AbortController();
    const run = trainingFreeGrpo({
      ...shape,
      policy: replayPolicy(reference.recording),
      store,
      runId: 'run',
      signal: controller.signal,
      onEpoch: async (epoch) => void first.push(epoch),
    });
    // Stop in the middle of epoch 2 (step 4 of 4), after step 3 has committed.
    for await (const event of run as AsyncIterable<TrainingFreeEvent>) if (event.type === 'item-end' && event.step === 4) controller.abort();
    expect((await store.lastStep('run'))?.step).toBe(3);
    expect(first.map((c) => c.epoch)).toEqual([1]);

    const second: EpochExport[] = [];
    const resumed = resumeTrainingFreeGrpo('run', {
      policy: replayPolicy(reference.recording),
      rewards: shape.rewards,
      store,
      onEpoch: async (epoch) => void second.push(epoch),
    });
    expect((await resumed.result()).status).toBe('completed');
    expect(second.map((c) => c.epoch)).toEqual([2]);
    expect(second[0].groups).toEqual(referenceEpoch(2));
    const ids = [...first, ...second].flatMap((c) => c.groups.map((g) => g.id));
    expect(new Set(ids).size).toBe(12);
  });

  it('is validated with the other options', () => {
    expect(() => trainingFreeGrpo({ ...standardShape(), policy: scriptedPolicy(), onEpoch: 'file.jsonl' as never })).toThrow(InvalidInputError);
  });
});

describe('webgrpo train --export-jsonl', () => {
  function io(options: { interrupt?: AbortSignal; policy?: () => ReturnType<typeof scriptedPolicy> } = {}) {
    const err: string[] = [];
    const value: TrainIo = {
      stdout: () => undefined,
      stderr: (t) => err.push(t),
      interactive: false,
      interrupt: options.interrupt ?? new AbortController().signal,
      loadModel: async () => (options.policy ?? scriptedPolicy)(),
    };
    return { io: value, err: () => err.join('') };
  }
  const args = ['--task', 'alphabetise', '--size', '4', '--seed', '1', '--epochs', '2', '--group', '4', '--batch', '2', '--mode', 'lessons', '--model', 'm'];

  it('appends one line per completion of each epoch, each line TRL JSON, and a resumed run adds only what it finishes', async () => {
    const store = join(dir, 'runs');
    const whole = join(dir, 'whole.jsonl');
    const cli = io();
    expect(await trainCli([...args, '--store', store, '--run-id', 'whole', '--export-jsonl', whole], cli.io), cli.err()).toBe(0);
    expect(cli.err()).toContain(`Appended 32 lines of training data to ${whole}`);
    const text = await readFile(whole, 'utf8');
    const { format, columns, rows } = checkTrlPromptCompletion(text);
    expect(format).toBe('conversational');
    expect(columns).toEqual(['advantage', 'completion', 'completion_id', 'group_id', 'prompt', 'reward']);
    // 2 epochs x 4 items x 4 completions; steps 1-2 are epoch 1, steps 3-4 epoch 2.
    expect(rows).toHaveLength(32);
    const stepOf = (row: Record<string, unknown>) => Number(String(row.group_id).split(':')[1]);
    expect(rows.slice(0, 16).every((r) => stepOf(r) <= 2)).toBe(true);
    expect(rows.slice(16).every((r) => stepOf(r) >= 3)).toBe(true);
    expect(new Set(rows.map((r) => r.completion_id)).size).toBe(32);
    for (const row of rows) {
      expect(row.completion_id).toMatch(new RegExp(`^${String(row.group_id)}:[0-3]$`));
      expect(typeof row.reward).toBe('number');
      expect(typeof row.advantage).toBe('number');
    }

    // Interrupted during the second item of epoch 2 (its 6th group of rollouts; critic calls have a
    // system message) and resumed: the file ends with the same lines, none twice.
    const controller = new AbortController();
    let rollouts = 0;
    const interrupting = () => {
      const inner = scriptedPolicy();
      return {
        ...inner,
        generateGroup: async (o: Parameters<typeof inner.generateGroup>[0]) => {
          if (o.messages?.[0].role !== 'system' && ++rollouts === 6) controller.abort();
          return inner.generateGroup(o);
        },
      };
    };
    const cut = join(dir, 'cut.jsonl');
    await writeFile(cut, '');
    const first = io({ interrupt: controller.signal, policy: interrupting });
    expect(await trainCli([...args, '--store', store, '--run-id', 'cut', '--export-jsonl', cut], first.io)).toBe(130);
    const afterFirst = (await readFile(cut, 'utf8')).split('\n').filter(Boolean);
    expect(afterFirst).toHaveLength(16);
    const resumed = io();
    expect(await trainCli(['--resume', 'cut', '--store', store, '--export-jsonl', cut], resumed.io)).toBe(0);
    expect(resumed.err()).toContain(`Appended 16 lines of training data to ${cut}`);
    const lines = (await readFile(cut, 'utf8')).replaceAll('"cut:', '"whole:');
    expect(lines).toBe(text);
  });

  it('refuses the standard format for a chat dataset before training when the model has no chat template to hand', async () => {
    const cli = io();
    expect(await trainCli([...args, '--store', join(dir, 'runs'), '--export-jsonl', join(dir, 'x.jsonl'), '--export-format', 'standard'], cli.io)).toBe(2);
    expect(cli.err()).toMatch(/--export-format standard renders chat prompts through the model's chat template, and scripted-alphabetise \(scripted\) has none/);
    const bad = io();
    expect(await trainCli([...args, '--store', join(dir, 'runs'), '--export-format', 'chatml'], bad.io)).toBe(2);
  });

  it('writes a chat dataset in the standard format through the model\'s chat template', async () => {
    const template = (input: { messages?: readonly { role: string; content: string }[] }) => `${input.messages!.map((m) => `<|${m.role}|>${m.content}\n`).join('')}<|assistant|>`;
    const rendering = () => ({ ...scriptedPolicy(), renderPrompt: async (input: Parameters<typeof template>[0]) => template(input) });
    const cli = io({ policy: rendering });
    const path = join(dir, 'standard.jsonl');
    expect(await trainCli([...args, '--epochs', '1', '--store', join(dir, 'runs'), '--run-id', 'standard', '--export-jsonl', path, '--export-format', 'standard'], cli.io), cli.err()).toBe(0);
    const { format, rows } = checkTrlPromptCompletion(await readFile(path, 'utf8'));
    expect(format).toBe('standard');
    expect(rows).toHaveLength(16);
    // The rollouts' prompts as the model read them (lessons included, from the second step on).
    expect(rows.every((r) => typeof r.prompt === 'string' && /^<\|user\|>(?:Lessons learned[^]*)?Put these words in alphabetical order: [^]*<\|assistant\|>$/.test(r.prompt as string))).toBe(true);
  });
});

describe('an export killed between the epoch commit and its append', () => {
  const child = fileURLToPath(new URL('./helpers/epoch-export-child.ts', import.meta.url));
  function runChild(args: string[]): Promise<number | null> {
    return new Promise((resolve) => {
      const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
      proc.on('exit', (code) => resolve(code));
    });
  }
  const quiet = (): TrainIo => ({
    stdout: () => undefined,
    stderr: () => undefined,
    interactive: false,
    interrupt: new AbortController().signal,
    loadModel: async () => scriptedPolicy(),
  });

  for (const kill of ['before-append', 'torn-line'] as const) {
    it(`(${kill}) is completed on resume: every line once, as in the uninterrupted run`, async () => {
      const root = await mkdtemp(join(dir, `${kill}-`));
      const recording = join(root, 'recording.json');
      await writeFile(recording, JSON.stringify(reference.recording));
      const store = join(root, 'runs');
      const whole = join(root, 'whole.jsonl');
      expect(await runChild([store, recording, 'whole', whole, 'none'])).toBe(0);
      const expected = await readFile(whole, 'utf8');
      expect(expected.trim().split('\n')).toHaveLength(48);

      const cut = join(root, 'cut.jsonl');
      expect(await runChild([store, recording, 'cut', cut, kill])).toBeNull();
      const opened = await openFileStore(store);
      // Epoch 1 (steps 1-2) is committed, its lines are not (or not all) on disk.
      expect((await opened.lastStep('cut'))?.step).toBe(2);
      const partial = await readFile(cut, 'utf8').catch(() => '');
      expect(partial.split('\n').filter((l) => l.endsWith('}')).length).toBeLessThan(24);

      const code = await trainCli(['--resume', 'cut', '--store', store, '--export-jsonl', cut, '--replay', recording], quiet());
      expect(code).toBe(0);
      const after = await readFile(cut, 'utf8');
      const rows = after.trim().split('\n').map((line) => JSON.parse(line) as { completion_id: string });
      expect(new Set(rows.map((r) => r.completion_id)).size).toBe(rows.length);
      // The same lines as the uninterrupted run's; a torn line's completion is written whole, later.
      const sorted = (text: string) => text.trim().split('\n').sort();
      expect(sorted(after.replaceAll('"cut:', '"whole:'))).toEqual(sorted(expected));
      if (kill === 'before-append') expect(after.replaceAll('"cut:', '"whole:')).toBe(expected);

      // Resuming the finished run again writes nothing twice.
      expect(await trainCli(['--resume', 'cut', '--store', store, '--export-jsonl', cut, '--replay', recording], quiet())).toBe(0);
      expect(await readFile(cut, 'utf8')).toBe(after);
    });
  }
});

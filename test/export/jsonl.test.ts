import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { exportEveryEpoch } from '../../lib/export/epoch.js';
import { jsonlFileSink, writeJsonlFile } from '../../lib/export/file.js';
import { toJsonl } from '../../lib/export/jsonl.js';
import type { ExportGroup } from '../../lib/run/groups.js';
import { toPreferenceJsonl } from '../../lib/export/preferences.js';
import { renderPrompts, toPromptJsonl } from '../../lib/export/prompts.js';
import { createSession, type Session } from '../../lib/session/session.js';
import type { GroupRecord } from '../../lib/store/records/session.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { checkTrlPromptCompletion } from './trl-format.js';

let dir: string;
let session: Session;
let raw: GroupRecord;
let chat: GroupRecord;
const messages = [
  { role: 'system' as const, content: 'Answer in "quotes".' },
  { role: 'user' as const, content: 'Line one\nline two \u2028 é 🙂' },
];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-export-'));
  session = createSession({ policy: createToyPolicy() });
  const a = await session.ask({ prompt: 'Sort: "b" a\\c\n', n: 3, seed: 11, maxNewTokens: 40 });
  await session.tell({ groupId: a.groupId, rewards: [1, null, 0.5], completions: [{ text: 'a b\u2028c "d"', reward: 0 }] });
  const b = await session.ask({ messages, n: 2, seed: 12, maxNewTokens: 40 });
  await session.tell({ groupId: b.groupId, rewards: [[1, 0], [0, 1]] });
  raw = await session.group(a.groupId);
  chat = await session.group(b.groupId);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('toJsonl', () => {
  it('writes TRL standard prompt-completion lines, one per completion, that JSON.parse reads back', () => {
    const jsonl = toJsonl([raw, chat]);
    const { format, columns, rows } = checkTrlPromptCompletion(jsonl);
    expect(format).toBe('standard');
    expect(columns).toEqual(['completion', 'prompt']);
    expect(rows).toHaveLength(6);
    expect(rows.slice(0, 4).map((r) => r.prompt)).toEqual(new Array(4).fill(raw.prompt));
    expect(rows.slice(0, 4).map((r) => r.completion)).toEqual(raw.completions.map((c) => c.text));
    // A chat's standard prompt is the exact text the model saw: the chat template applied.
    expect(rows[4].prompt).toBe(chat.promptText);
    expect(rows[4].prompt).toBe(createToyPolicy().render({ messages }));
    expect(jsonl).not.toMatch(/[\u2028\u2029]/);
  });

  it('writes TRL conversational lines with the extra columns asked for', () => {
    const include = ['reward', 'advantage', 'groupId', 'completionId', 'logprobs', 'tokenIds'] as const;
    const jsonl = toJsonl({ groups: [raw, chat] }, { format: 'conversational', include });
    const { format, columns, rows } = checkTrlPromptCompletion(jsonl);
    expect(format).toBe('conversational');
    expect(columns).toEqual(['advantage', 'completion', 'completion_id', 'group_id', 'logprobs', 'prompt', 'reward', 'token_ids']);
    expect(rows[0].prompt).toEqual([{ role: 'user', content: raw.prompt }]);
    expect(rows[4].prompt).toEqual(messages);
    const all = [...raw.completions, ...chat.completions];
    rows.forEach((row, i) => {
      expect(row.completion).toEqual([{ role: 'assistant', content: all[i].text }]);
      expect(row.reward).toBe(all[i].reward);
      expect(row.advantage).toBe(all[i].advantage);
      expect(row.completion_id).toBe(all[i].id);
      expect(row.logprobs).toEqual(all[i].logprobs);
      expect(row.token_ids).toEqual(all[i].tokenIds);
    });
    expect(rows[1].reward).toBeNull();
    expect(rows[3].completion_id).toBe(`${raw.id}-3`);
  });

  it('skips unrewarded completions on request and accepts plain export groups', () => {
    const plain: ExportGroup = { id: 'x', prompt: 'p', completions: [{ text: 'a', reward: 1 }, { text: 'b' }] };
    // Whole rewards are floats (1.0): a file of them and one of fractions load with one column type.
    expect(toJsonl([plain], { rewardedOnly: true, include: ['reward'] })).toBe('{"prompt":"p","completion":"a","reward":1.0}\n');
    expect(toJsonl([plain], { include: ['reward', 'advantage'] })).toBe(
      '{"prompt":"p","completion":"a","reward":1.0,"advantage":null}\n{"prompt":"p","completion":"b","reward":null,"advantage":null}\n',
    );
    expect(toJsonl([])).toBe('');
  });

  it('writes floats as floats, token ids as integers, and the arm only where completions have one', () => {
    const whole: ExportGroup = { id: 'w', prompt: 'p', completions: [{ id: 'w:0', text: 'a', reward: 0, advantage: -1, logprobs: [-2, -0.5, 0], tokenIds: [3, 4, 5] }] };
    const line = toJsonl([whole], { include: ['reward', 'advantage', 'logprobs', 'tokenIds', 'arm'] });
    expect(line).toBe('{"prompt":"p","completion":"a","reward":0.0,"advantage":-1.0,"logprobs":[-2.0,-0.5,0.0],"token_ids":[3,4,5]}\n');
    expect(JSON.parse(line)).toMatchObject({ reward: 0, advantage: -1 });
    // A whole number too large for digits is written with an exponent, which reads as a float too.
    expect(toJsonl([{ ...whole, completions: [{ text: 'a', reward: 1e21 }] }], { include: ['reward'] })).toContain('"reward":1e+21}');
    const routed: ExportGroup = { id: 'r', prompt: 'p', completions: [{ text: 'a', arm: 'terse' }, { text: 'b', arm: 'hot' }] };
    expect(toJsonl([routed], { include: ['arm'] })).toBe('{"prompt":"p","completion":"a","arm":"terse"}\n{"prompt":"p","completion":"b","arm":"hot"}\n');
    // A source mixing both would give a column that is null on some lines: refused.
    expect(() => toJsonl([routed, whole], { include: ['arm'] })).toThrow(/has no arm where earlier ones had/);
  });

  it('writes chat prompts in the standard format once renderPrompts has put them through the chat template', async () => {
    const bare: ExportGroup = { id: 'c', messages, completions: [{ text: 'a' }] };
    expect(() => toJsonl([bare])).toThrow(/renderPrompts\(groups, policy\)/);
    const policy = createToyPolicy();
    // The toy's chat template, as a function (a real policy is passed as itself: its renderPrompt).
    const rendered = await renderPrompts([bare, raw], async (input) => policy.render(input));
    expect(rendered[1]).toBe(raw);
    const { rows } = checkTrlPromptCompletion(toJsonl(rendered));
    expect(rows[0].prompt).toBe(policy.render({ messages }));
    await expect(renderPrompts([bare], {} as never)).rejects.toThrow(InvalidInputError);
  });

  it("writes GRPOTrainer's dataset: one line per item, its own prompt, the answer as text ('' where none)", async () => {
    const items = [
      { id: 'a', messages, answer: 7 },
      { prompt: 'Say hi', answer: { keys: ['x'] } },
      { id: 'c', prompt: 'Say no' },
    ];
    const conversational = (await toPromptJsonl(items)).trim().split('\n').map((l) => JSON.parse(l));
    expect(conversational).toEqual([
      { prompt: messages, answer: '7', item_id: 'a' },
      { prompt: [{ role: 'user', content: 'Say hi' }], answer: '{"keys":["x"]}', item_id: '' },
      { prompt: [{ role: 'user', content: 'Say no' }], answer: '', item_id: 'c' },
    ]);
    await expect(toPromptJsonl(items, { format: 'standard' })).rejects.toThrow(/pass `render`/);
    const policy = createToyPolicy();
    const standard = (await toPromptJsonl(items, { format: 'standard', render: { renderPrompt: async (input) => policy.render(input) } })).trim().split('\n').map((l) => JSON.parse(l));
    expect(standard.map((r) => r.prompt)).toEqual([policy.render({ messages }), 'Say hi', 'Say no']);
    await expect(toPromptJsonl({} as never)).rejects.toThrow(InvalidInputError);
  });

  it("writes each group's best and worst completions as TRL preference pairs, leaving out groups that prefer nothing", () => {
    const spread: ExportGroup = { id: 's', messages, completions: [{ text: 'mid', reward: 0.5 }, { text: 'best', reward: 1 }, { text: 'unscored', reward: null }, { text: 'worst', reward: -1 }, { text: 'best too', reward: 1 }] };
    const tied: ExportGroup = { id: 't', prompt: 'p', completions: [{ text: 'a', reward: 1 }, { text: 'b', reward: 1 }] };
    const lone: ExportGroup = { id: 'l', prompt: 'p', completions: [{ text: 'a', reward: 1 }, { text: 'b' }] };
    const rows = toPreferenceJsonl([spread, tied, lone]).trim().split('\n').map((l) => JSON.parse(l));
    expect(rows).toEqual([{ prompt: messages, chosen: [{ role: 'assistant', content: 'best' }], rejected: [{ role: 'assistant', content: 'worst' }] }]);
    const raw2: ExportGroup = { id: 'r', prompt: 'Say', completions: [{ text: 'no', reward: 0 }, { text: 'yes', reward: 2 }] };
    expect(toPreferenceJsonl([raw2], { format: 'standard' })).toBe('{"prompt":"Say","chosen":"yes","rejected":"no"}\n');
    expect(() => toPreferenceJsonl([spread], { format: 'standard' })).toThrow(/renderPrompts/);
    expect(() => toPreferenceJsonl([raw2], { format: 'dpo' as never })).toThrow(InvalidInputError);
  });

  it('refuses what it cannot write faithfully, with typed errors', () => {
    const chatWithoutText: ExportGroup = { id: 'c', messages, completions: [{ text: 'a' }] };
    expect(() => toJsonl([chatWithoutText])).toThrow(/format 'conversational'/);
    expect(toJsonl([chatWithoutText], { format: 'conversational' })).toContain('"role":"system"');
    expect(() => toJsonl([raw], { format: 'chatml' as never })).toThrow(InvalidInputError);
    expect(() => toJsonl([raw], { include: ['score' as never] })).toThrow(/unknown column "score"/);
    expect(() => toJsonl(42 as never)).toThrow(InvalidInputError);
  });
});

describe('JSONL files (Node)', () => {
  it('writes a file equal to toJsonl, and a failed write leaves the old file untouched', async () => {
    const path = join(dir, 'all.jsonl');
    expect(await writeJsonlFile(path, [raw, chat], { include: ['reward'] })).toBe(6);
    expect(await readFile(path, 'utf8')).toBe(toJsonl([raw, chat], { include: ['reward'] }));
    const bad: ExportGroup = { id: 'bad', messages, completions: [{ text: 'x' }] };
    await expect(writeJsonlFile(path, [raw, bad])).rejects.toThrow(InvalidInputError);
    expect(await readFile(path, 'utf8')).toBe(toJsonl([raw, chat], { include: ['reward'] }));
  });

  it('appends one epoch at a time through the epoch hook, in call order', async () => {
    const path = join(dir, 'epochs.jsonl');
    await writeFile(path, 'stale\n');
    const sink = jsonlFileSink(path, { truncate: true });
    const hook = exportEveryEpoch(sink, { include: ['groupId'] });
    await Promise.all([hook({ epoch: 0, groups: [raw] }), hook({ epoch: 1, groups: [] }), hook({ epoch: 2, groups: [chat] })]);
    await sink.flush();
    const text = await readFile(path, 'utf8');
    expect(text).toBe(toJsonl([raw, chat], { include: ['groupId'] }));
    checkTrlPromptCompletion(text);
  });
});

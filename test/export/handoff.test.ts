/**
 * The hand-off round trip: real runs of every method (exemplars, LoRA, router, the head adapter)
 * on the bundled tiny ONNX model through `webgrpo train`, exported with `webgrpo export`, and read
 * back with readers independent of the writers: hyparquet for verl's parquet, a JSON Lines reader
 * that types columns as pyarrow does and checks them across files (what `datasets` needs to
 * concatenate), TRL's own format rules, and, where /usr/bin/python3 has pandas, pandas as a Python
 * consumer reads the files (parquet too where pyarrow is installed). The shipped verl reward file
 * gives the run's own rewards on the run's own replies, read from the parquet as verl hands them.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects, parquetSchema } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as exportCli, type ExportIo } from '../../lib/cli/export.js';
import { modelPath } from '../../lib/cli/model-arg.js';
import { run as trainCli, type TrainIo } from '../../lib/cli/train.js';
import { runGroups } from '../../lib/export/run.js';
import { readLoraAdapterFile } from '../../lib/lora/format.js';
import { importPeftAdapter, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE } from '../../lib/lora/peft.js';
import { openFileStore } from '../../lib/node.js';
import { loadOnnxPolicy } from '../../lib/onnx.js';
import type { RunBundle } from '../../lib/store/records/index.js';
import { sameColumnTypes } from './jsonl-types.js';
import { checkTrlPromptCompletion } from './trl-format.js';

const PYTHON = '/usr/bin/python3';
const hasPandas = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import pandas'], { encoding: 'utf8' }).status === 0;
const METHODS = ['exemplars', 'lora', 'router', 'gradient'] as const;
const EPOCHS = 2;
const GROUP = 2;

let dir: string;
let store: string;
const bundles: Record<string, RunBundle> = {};
const stderr: Record<string, string> = {};

const load = async (model: string | undefined, trainable = false) => loadOnnxPolicy({ model: await modelPath(model ?? 'webgrpo-tiny'), hiddenState: trainable, device: 'cpu' });
function trainIo(log: string[]): TrainIo {
  return { stdout: () => undefined, stderr: (t) => log.push(t), interactive: false, interrupt: new AbortController().signal, loadModel: (model, _d, _p, o) => load(model, o?.trainable === true) };
}
async function exportRun(argv: string[]): Promise<string> {
  const log: string[] = [];
  const io: ExportIo = { stdout: () => undefined, stderr: (t) => log.push(t), loadModel: (model) => load(model) };
  const code = await exportCli([...argv, '--store', store], io);
  expect(code, log.join('')).toBe(0);
  return log.join('');
}
const file = (name: string) => join(dir, name);
const toArrayBuffer = (bytes: Uint8Array) => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-handoff-'));
  store = file('runs');
  // Each method on first-letter; exemplars on alphabetise too (other rewards, other files to concatenate).
  const runs = [...METHODS.map((m) => [m, m, 'first-letter'] as const), ['alphabetise', 'exemplars', 'alphabetise'] as const];
  for (const [id, method, task] of runs) {
    const log: string[] = [];
    const extra = method === 'lora' ? ['--rank', '2', '--peft-out', file('peft-train')] : [];
    const argv = ['--method', method, ...extra, '--task', task, '--size', '3', '--epochs', String(EPOCHS), '--group', String(GROUP), '--batch', '3', '--max-new-tokens', '4', '--store', store, '--run-id', id, '--quiet'];
    expect(await trainCli(argv, trainIo(log)), log.join('')).toBe(0);
    stderr[id] = log.join('');
  }
  const opened = await openFileStore(store);
  for (const id of [...METHODS, 'alphabetise']) bundles[id] = await opened.readBundle(id);
  await opened.close();
  for (const id of Object.keys(bundles)) {
    const outputs = ['--verl', file(`${id}.parquet`), '--trl', file(`${id}.trl.jsonl`), '--rollouts', file(`${id}.rollouts.jsonl`), '--preferences', file(`${id}.pairs.jsonl`)];
    stderr[`export ${id}`] = await exportRun([id, ...outputs, ...(id === 'lora' ? ['--peft', file('peft-export')] : [])]);
  }
  await exportRun(['exemplars', '--format', 'standard', '--trl', file('standard.trl.jsonl'), '--rollouts', file('standard.rollouts.jsonl')]);
}, 120_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('the verl parquet of every method', () => {
  it('has one row per prompt, the user\'s prompt, a string ground truth and the run\'s replies, in one schema for every run', async () => {
    let schema: string | undefined;
    for (const [id, bundle] of Object.entries(bundles)) {
      const bytes = toArrayBuffer(await readFile(file(`${id}.parquet`)));
      const fields = JSON.stringify(parquetSchema(parquetMetadata(bytes)).children.map(function names(c): unknown {
        return [c.element.name, c.element.type ?? null, c.children.map(names)];
      }));
      schema ??= fields;
      expect(fields, `${id}'s schema`).toBe(schema);
      const rows = (await parquetReadObjects({ file: bytes })) as Array<Record<string, any>>;
      expect(rows).toHaveLength(3);
      rows.forEach((row, index) => {
        const item = bundle.items[index];
        expect(row.data_source).toBe(bundle.run.config.task);
        // The item's own prompt: not the exemplars' library, not the router arm's instruction.
        expect(row.prompt).toEqual(item.messages);
        expect(row.reward_model.ground_truth).toBe(item.answer);
        expect(row.extra_info.index).toBe(BigInt(index));
        expect(row.extra_info.item_id).toBe(item.id);
        // Every epoch's group of the item, whatever the method split it into.
        expect(row.extra_info.responses).toHaveLength(EPOCHS * GROUP);
        expect(row.extra_info.rewards.every((r: unknown) => typeof r === 'number')).toBe(true);
      });
    }
    // The router sampled with instructions the user never wrote; none of them reached the export.
    const routed = bundles.router.steps.flatMap((s) => s.items).flatMap((r) => r.rollouts.map((x) => x.arm));
    expect(routed).toContain('terse');
    expect(JSON.stringify(await parquetReadObjects({ file: toArrayBuffer(await readFile(file('router.parquet'))) }), (_k, v) => (typeof v === 'bigint' ? Number(v) : v))).not.toMatch(/as few words/);
  });

  it.skipIf(!existsSync(PYTHON))('scores the run\'s replies with the shipped reward file as the run did, from the rows verl hands it', async () => {
    const cases: Array<{ path: string; data_source: string; solution_str: string; ground_truth: string; extra_info: unknown; expected: number }> = [];
    for (const id of Object.keys(bundles)) {
      const rows = (await parquetReadObjects({ file: toArrayBuffer(await readFile(file(`${id}.parquet`))) })) as Array<Record<string, any>>;
      for (const row of rows) {
        const extra = { ...row.extra_info, index: Number(row.extra_info.index) };
        row.extra_info.responses.forEach((text: string, i: number) => {
          cases.push({ path: join(import.meta.dirname, '../../python/webgrpo_rewards/webgrpo.py'), data_source: row.data_source, solution_str: text, ground_truth: row.reward_model.ground_truth, extra_info: extra, expected: row.extra_info.rewards[i] });
        });
      }
    }
    const result = spawnSync(PYTHON, [join(import.meta.dirname, 'verl-reward.py')], { input: JSON.stringify(cases), encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    expect(result.stderr).toBe('');
    const scores = JSON.parse(result.stdout) as number[];
    expect(scores).toHaveLength(5 * 3 * EPOCHS * GROUP);
    scores.forEach((score, i) => expect(score, JSON.stringify(cases[i])).toBeCloseTo(cases[i].expected, 12));
  });
});

describe('the TRL files of every method', () => {
  it('load as one dataset: each file TRL prompt-completion data, float rewards, no null column, one type per column across files', async () => {
    const rollouts: Record<string, string> = {};
    for (const id of Object.keys(bundles)) rollouts[id] = await readFile(file(`${id}.rollouts.jsonl`), 'utf8');
    for (const [id, text] of Object.entries(rollouts)) {
      const { format, columns, rows } = checkTrlPromptCompletion(text);
      expect(format).toBe('conversational');
      expect(columns).toEqual(['advantage', 'completion', 'completion_id', 'group_id', 'prompt', 'reward', ...(id === 'router' ? ['arm'] : [])].sort());
      expect(rows).toHaveLength(3 * EPOCHS * GROUP);
      // Whole numbers are written as floats: `"reward":0` would be int64 for pyarrow.
      expect(text).not.toMatch(/"(reward|advantage)":-?\d+[,}]/);
    }
    // The router's file has one column more; without it the files type alike.
    expect(sameColumnTypes(rollouts)).toMatchObject({ reward: 'double', advantage: 'double', arm: 'string' });

    const prompts: Record<string, string> = {};
    for (const id of Object.keys(bundles)) prompts[id] = await readFile(file(`${id}.trl.jsonl`), 'utf8');
    expect(sameColumnTypes(prompts)).toEqual({ prompt: 'list<struct<content:string,role:string>>', answer: 'string', item_id: 'string' });
    for (const [id, text] of Object.entries(prompts)) {
      const rows = text.trim().split('\n').map((l) => JSON.parse(l));
      expect(rows).toEqual(bundles[id].items.map((item) => ({ prompt: item.messages, answer: item.answer, item_id: item.id })));
    }
  });

  it("writes TRL preference pairs (prompt, chosen, rejected) of each group with a reward spread, typed alike in every file", async () => {
    const pairs: Record<string, string> = {};
    for (const [id, bundle] of Object.entries(bundles)) {
      pairs[id] = await readFile(file(`${id}.pairs.jsonl`), 'utf8');
      const rows = pairs[id].split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const spread = runGroups(bundle).filter((g) => new Set(g.completions.map((c) => c.reward)).size > 1);
      expect(rows).toEqual(
        spread.map((g) => {
          const best = g.completions.reduce((a, c) => (c.reward! > a.reward! ? c : a));
          const worst = g.completions.reduce((a, c) => (c.reward! < a.reward! ? c : a));
          return { prompt: g.messages, chosen: [{ role: 'assistant', content: best.text }], rejected: [{ role: 'assistant', content: worst.text }] };
        }),
      );
    }
    // alphabetise's partial credit spreads every group of random replies.
    expect(pairs.alphabetise.split('\n').filter(Boolean).length).toBeGreaterThan(0);
    const message = 'list<struct<content:string,role:string>>';
    expect(sameColumnTypes(Object.fromEntries(Object.entries(pairs).filter(([, text]) => text !== '')))).toEqual({ prompt: message, chosen: message, rejected: message });
  });

  it('writes the standard format through the model\'s own chat template', async () => {
    const { format, rows } = checkTrlPromptCompletion(await readFile(file('standard.rollouts.jsonl'), 'utf8'));
    expect(format).toBe('standard');
    const policy = await load(undefined);
    try {
      const groups = bundles.exemplars.steps.flatMap((s) => s.items);
      expect(rows[0].prompt).toBe(await policy.renderPrompt!(groups[0].prompt));
      expect(rows[0].prompt).toMatch(/^<s><\|im_start\|>user\n/);
      const dataset = (await readFile(file('standard.trl.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
      expect(dataset[0].prompt).toBe(await policy.renderPrompt!({ messages: bundles.exemplars.items[0].messages }));
    } finally {
      await policy.dispose();
    }
  });

  it.skipIf(!hasPandas)('are read by pandas as a Python consumer reads them, and concatenate with float rewards', async () => {
    const request = {
      jsonl: { rollouts: Object.keys(bundles).filter((id) => id !== 'router').map((id) => file(`${id}.rollouts.jsonl`)), prompts: Object.keys(bundles).map((id) => file(`${id}.trl.jsonl`)) },
      parquet: Object.keys(bundles).map((id) => file(`${id}.parquet`)),
    };
    const result = spawnSync(PYTHON, [join(import.meta.dirname, 'consume.py'), JSON.stringify(request)], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    const read = JSON.parse(result.stdout);
    for (const path of request.jsonl.rollouts) expect(read.jsonl[path]).toMatchObject({ reward: 'float64', advantage: 'float64' });
    expect(read.concat.rollouts).toEqual({ rows: 4 * 3 * EPOCHS * GROUP, dtypes: expect.objectContaining({ reward: 'float64', advantage: 'float64' }) });
    expect(read.concat.prompts.rows).toBe(5 * 3);
    if (typeof read.parquet !== 'string') for (const path of request.parquet) expect(read.parquet[path]).toHaveLength(3);
  });
});

describe('the PEFT folder of a LoRA run', () => {
  it('is written by train --peft-out and export --peft alike, named after the run\'s model, and holds the run\'s adapter', async () => {
    const config = JSON.parse(await readFile(join(file('peft-export'), PEFT_CONFIG_FILE), 'utf8'));
    expect(await readFile(join(file('peft-train'), PEFT_CONFIG_FILE), 'utf8')).toBe(await readFile(join(file('peft-export'), PEFT_CONFIG_FILE), 'utf8'));
    expect(Buffer.compare(await readFile(join(file('peft-train'), PEFT_WEIGHTS_FILE)), await readFile(join(file('peft-export'), PEFT_WEIGHTS_FILE)))).toBe(0);
    // The bundled model is no base transformers loads, and the export says so.
    expect(config.base_model_name_or_path).toBe('webgrpo-tiny');
    expect(stderr['export lora']).toMatch(/Note: webgrpo-tiny is a bundled model with ONNX weights only: transformers cannot load it/);
    const shape = { vocabSize: 102, hiddenSize: 128, intermediateSize: 352, numLayers: 4, numHeads: 4, numKvHeads: 2, headDim: 32, ropeTheta: 10000, rmsNormEps: 1e-5 };
    const back = importPeftAdapter({ [PEFT_CONFIG_FILE]: JSON.stringify(config), [PEFT_WEIGHTS_FILE]: new Uint8Array(await readFile(join(file('peft-export'), PEFT_WEIGHTS_FILE))) }, shape);
    const stored = readLoraAdapterFile((bundles.lora.adapter as { adapter: unknown }).adapter);
    expect(back.config).toEqual(stored.config);
    expect(back.layers).toEqual(stored.layers);
    // The trained adapter moved off its zero start.
    expect(stored.layers.some((layer) => Object.values(layer).some((pair) => pair!.B.some((v) => v !== 0)))).toBe(true);
  });

  it('is refused for runs whose adapter PEFT has no type for, and --peft-out for other methods', async () => {
    const log: string[] = [];
    const io: ExportIo = { stdout: () => undefined, stderr: (t) => log.push(t), loadModel: (model) => load(model) };
    expect(await exportCli(['gradient', '--store', store, '--verl', file('nope.parquet'), '--peft', file('nope')], io)).toBe(1);
    expect(log.join('')).toMatch(/run gradient is a gradient run; only LoRA runs .* \(the head adapter has no PEFT type\)/);
    // Refused before anything is written.
    expect(existsSync(file('nope')) || existsSync(file('nope.parquet'))).toBe(false);
    const train: string[] = [];
    expect(await trainCli(['--method', 'router', '--task', 'digits', '--peft-out', file('nope'), '--store', store], trainIo(train))).toBe(2);
    expect(train.join('')).toMatch(/--peft-out writes a LoRA adapter; it is an option of --method lora/);
  });
});

describe('webgrpo export', () => {
  it('refuses a command line it cannot carry out, saying what to give', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['exemplars'], /Say what to write: --verl, --trl, --rollouts, --preferences and\/or --peft/],
      [['--verl', file('x.parquet')], /Give the id of one stored run/],
      [['nope', '--verl', file('x.parquet')], /No run "nope" in .*webgrpo train --list/],
      [['exemplars', '--trl', file('x.jsonl'), '--format', 'chatml'], /--format must be standard or conversational, got "chatml"/],
      [['exemplars', '--trl', file('x.jsonl'), '--data-source', 'x'], /--data-source names verl's data_source; give it with --verl/],
      [['exemplars', '--verbose'], /Unknown option '--verbose'/],
    ];
    for (const [argv, message] of cases) {
      const log: string[] = [];
      const io: ExportIo = { stdout: () => undefined, stderr: (t) => log.push(t), loadModel: (model) => load(model) };
      expect(await exportCli([...argv, '--store', store], io), argv.join(' ')).toBe(2);
      expect(log.join('')).toMatch(message);
    }
    expect(existsSync(file('x.jsonl')) || existsSync(file('x.parquet'))).toBe(false);
  });
});

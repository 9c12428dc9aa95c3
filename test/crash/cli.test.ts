/**
 * The kill -9 matrix of the real `webgrpo train` process: the CLI (`lib/cli/main.ts`) on a file
 * store and the bundled tiny ONNX model, seeded, with `--export-jsonl`, killed with SIGKILL three
 * times in one run (kill-point.ts): right after its epoch-ending step 2 is committed, then (resumed)
 * mid-generation of step 3's group, then (resumed again) halfway through writing step 3's file.
 * A last `--resume` finishes it; its stored steps, items, checkpoint and end equal an unkilled
 * run's (commit times aside), its JSONL export equals that run's byte for byte (every epoch once),
 * and nothing temporary is left. Exemplars (training-free, the CLI's default on the bundled model)
 * and LoRA (an adapter and its optimizer state) by default; `WEBGRPO_CLI_CRASH=all` adds gradient
 * (the head adapter) and router. The loop-level matrix (matrix.test.ts) kills at every commit.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openFileStore } from '../../lib/node.js';
import { comparable, leftovers } from './compare.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const killPoint = fileURLToPath(new URL('./kill-point.ts', import.meta.url));
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-cli-crash-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Two epochs of two one-item steps: four steps, the export appended after steps 2 and 4. */
const SHAPE = ['--task', 'digits', '--size', '2', '--epochs', '2', '--group', '2', '--batch', '1', '--max-new-tokens', '4', '--seed', '1', '--quiet'];
const METHODS: Record<string, string[]> = {
  exemplars: ['--method', 'exemplars'],
  lora: ['--method', 'lora', '--rank', '2'],
  gradient: ['--method', 'gradient', '--rank', '2'],
  router: ['--method', 'router'],
};
const methods = process.env.WEBGRPO_CLI_CRASH === 'all' ? Object.keys(METHODS) : ['exemplars', 'lora'];

interface Exit {
  code: number | null;
  signal: string | null;
  stderr: string;
}

/** `webgrpo train <args>` as its own process; with `kill`, killed there (kill-point.ts). */
function train(args: string[], kill?: string): Promise<Exit> {
  const preload = kill ? ['--import', killPoint] : [];
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', ...preload, join(root, 'lib/cli/main.ts'), 'train', ...args], {
      cwd: root,
      env: { ...process.env, ...(kill ? { WEBGRPO_KILL: kill } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    proc.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}

describe.each(methods)('webgrpo train --method %s killed with SIGKILL, then --resume', (method) => {
  it('ends with the unkilled run\'s steps, checkpoint and export', { timeout: 240_000 }, async () => {
    const store = (name: string) => ['--store', join(dir, `${method}-${name}`)];
    const jsonl = (name: string) => ['--export-jsonl', join(dir, `${method}-${name}.jsonl`)];

    const whole = await train([...METHODS[method], ...SHAPE, ...store('whole'), ...jsonl('whole'), '--run-id', 'r']);
    expect(whole.code, whole.stderr).toBe(0);

    const args = [...store('killed'), ...jsonl('killed')];
    const kills: Array<[string, string[]]> = [
      ['after-step:2', [...METHODS[method], ...SHAPE, '--run-id', 'r']],
      ['sampling:2', ['--resume', 'r']],
      ['torn-step:1', ['--resume', 'r']],
    ];
    const progress: number[] = [];
    for (const [point, first] of kills) {
      const killed = await train([...first, ...args], point);
      expect([point, killed.signal], killed.stderr).toEqual([point, 'SIGKILL']);
      const killedStore = await openFileStore(join(dir, `${method}-killed`));
      progress.push((await killedStore.lastStep('r'))?.step ?? 0);
      await killedStore.close();
    }
    // Where each kill left the run: step 2 in place; nothing of step 3 (killed sampling it); still nothing (its file torn).
    expect(progress).toEqual([2, 2, 2]);

    const resumed = await train(['--resume', 'r', ...args, '--out', join(dir, `${method}-out.json`)]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`Resuming run r (digits, ${method === 'exemplars' ? 'exemplars' : method})`);

    const expected = await openFileStore(join(dir, `${method}-whole`));
    const actual = await openFileStore(join(dir, `${method}-killed`));
    expect(comparable(await actual.readBundle('r'))).toEqual(comparable(await expected.readBundle('r')));
    await Promise.all([expected.close(), actual.close()]);
    expect(await readFile(join(dir, `${method}-killed.jsonl`), 'utf8')).toBe(await readFile(join(dir, `${method}-whole.jsonl`), 'utf8'));
    expect(JSON.parse(await readFile(join(dir, `${method}-out.json`), 'utf8')).run.status).toBe('completed');
    // Opening the store cleared what the kills left (the torn temporary file, the linked step's temporary name).
    expect(await leftovers(join(dir, `${method}-killed`))).toEqual([]);
  });
});

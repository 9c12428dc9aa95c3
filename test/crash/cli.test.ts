/**
 * The kill -9 matrix of the real `webgrpo train` process: the CLI (`lib/cli/main.ts`) on a file
 * store and the bundled tiny ONNX model, seeded, with `--export-jsonl`, killed with SIGKILL three
 * times in one run (kill-point.ts): right after its epoch-ending step 2 is committed, then (resumed)
 * mid-generation of step 3's group, then (resumed again) halfway through writing step 3's file.
 * A last `--resume` finishes it; its stored steps, items, checkpoint and end equal an unkilled
 * run's (commit times aside), its JSONL export equals that run's byte for byte (every epoch once),
 * and nothing temporary is left. Exemplars (training-free, the CLI's default on the bundled model)
 * and LoRA (an adapter and its optimizer state) by default; `WEBGRPO_CLI_CRASH=all` adds gradient
 * (the head adapter) and router. `WEBGRPO_CLI_CRASH_RANDOM=<n>` also runs n runs per method that
 * are killed from outside at random moments (seeded by `WEBGRPO_CLI_CRASH_SEED`, printed), and
 * resumed and killed again until one attempt ends.
 * The loop-level matrix (matrix.test.ts) kills at every commit.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../lib/math.js';
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
  /** Milliseconds from naming its run (the model loaded) to its exit. */
  runMs: number;
}

/**
 * `webgrpo train <args>` as its own process; with `kill`, killed there (kill-point.ts); with
 * `killAfterMs`, killed from outside that long after it names its run (the model loaded).
 */
function train(args: string[], kill?: string, killAfterMs?: number): Promise<Exit> {
  const preload = kill ? ['--import', killPoint] : [];
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', ...preload, join(root, 'lib/cli/main.ts'), 'train', ...args], {
      cwd: root,
      env: { ...process.env, ...(kill ? { WEBGRPO_KILL: kill } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let named: number | undefined;
    let timer: NodeJS.Timeout | undefined;
    proc.stderr.on('data', (d) => {
      stderr += d;
      if (named !== undefined || !/^(Run|Resuming run) r /m.test(stderr)) return;
      named = Date.now();
      if (killAfterMs !== undefined) timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs);
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr, runMs: named === undefined ? 0 : Date.now() - named });
    });
  });
}

const storeOf = (method: string, name: string) => join(dir, `${method}-${name}`);
const argsOf = (method: string, name: string) => ['--store', storeOf(method, name), '--export-jsonl', `${storeOf(method, name)}.jsonl`];

/** Each method's unkilled run, made once (with how long it took from naming its run to its end). */
const references = new Map<string, Promise<{ ms: number }>>();
function reference(method: string): Promise<{ ms: number }> {
  if (!references.has(method)) {
    references.set(
      method,
      (async () => {
        const whole = await train([...METHODS[method], ...SHAPE, ...argsOf(method, 'whole'), '--run-id', 'r']);
        expect(whole.code, whole.stderr).toBe(0);
        return { ms: whole.runMs };
      })(),
    );
  }
  return references.get(method)!;
}

/** The killed run, finished, against the unkilled one: records, export, no leftovers. */
async function expectSameAsWhole(method: string, name: string): Promise<void> {
  const expected = await openFileStore(storeOf(method, 'whole'));
  const actual = await openFileStore(storeOf(method, name));
  expect(comparable(await actual.readBundle('r'))).toEqual(comparable(await expected.readBundle('r')));
  await Promise.all([expected.close(), actual.close()]);
  expect(await readFile(`${storeOf(method, name)}.jsonl`, 'utf8')).toBe(await readFile(`${storeOf(method, 'whole')}.jsonl`, 'utf8'));
  // Opening the store cleared what the kills left (a torn temporary file, a linked step's temporary name).
  expect(await leftovers(storeOf(method, name))).toEqual([]);
}

async function lastStep(store: string): Promise<number | undefined> {
  const opened = await openFileStore(store);
  try {
    return (await opened.getRun('r')) ? ((await opened.lastStep('r'))?.step ?? 0) : undefined;
  } finally {
    await opened.close();
  }
}

const RANDOM = Number(process.env.WEBGRPO_CLI_CRASH_RANDOM ?? 0);

describe.each(methods)('webgrpo train --method %s killed with SIGKILL, then --resume', (method) => {
  it("ends with the unkilled run's steps, checkpoint and export", { timeout: 240_000 }, async () => {
    await reference(method);
    const args = argsOf(method, 'killed');
    const kills: Array<[string, string[]]> = [
      ['after-step:2', [...METHODS[method], ...SHAPE, '--run-id', 'r']],
      ['sampling:2', ['--resume', 'r']],
      ['torn-step:1', ['--resume', 'r']],
    ];
    const progress: Array<number | undefined> = [];
    for (const [point, first] of kills) {
      const killed = await train([...first, ...args], point);
      expect([point, killed.signal], killed.stderr).toEqual([point, 'SIGKILL']);
      progress.push(await lastStep(storeOf(method, 'killed')));
    }
    // Where each kill left the run: step 2 in place; nothing of step 3 (killed sampling it); still nothing (its file torn).
    expect(progress).toEqual([2, 2, 2]);

    const out = `${storeOf(method, 'killed')}-out.json`;
    const resumed = await train(['--resume', 'r', ...args, '--out', out]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain(`Resuming run r (digits, ${method})`);
    expect(JSON.parse(await readFile(out, 'utf8')).run.status).toBe('completed');
    await expectSameAsWhole(method, 'killed');
  });

  it.runIf(RANDOM > 0)(`killed from outside at random moments, ${RANDOM} times over, resumed (and killed again) until it ends`, { timeout: 600_000 }, async () => {
    const { ms } = await reference(method);
    const seed = Number(process.env.WEBGRPO_CLI_CRASH_SEED ?? Date.now() % 1_000_000);
    const rng = mulberry32(seed);
    for (let trial = 0; trial < RANDOM; trial++) {
      const name = `random-${trial}`;
      const seen: string[] = [];
      // Each attempt is killed at a random moment of a whole run's span; a kill before the run was stored starts it again.
      for (let attempt = 0; ; attempt++) {
        const first = (await lastStep(storeOf(method, name))) === undefined ? [...METHODS[method], ...SHAPE, '--run-id', 'r'] : ['--resume', 'r'];
        const exit = await train([...first, ...argsOf(method, name)], undefined, attempt < 6 ? Math.floor(rng() * ms) : undefined);
        expect([seed, trial, attempt, exit.signal ?? exit.code], exit.stderr).toEqual([seed, trial, attempt, exit.signal ? 'SIGKILL' : 0]);
        seen.push(exit.signal ? `killed at step ${(await lastStep(storeOf(method, name))) ?? 'none'}` : 'ended');
        if (!exit.signal) break;
      }
      console.log(`webgrpo train --method ${method} (WEBGRPO_CLI_CRASH_SEED=${seed}, trial ${trial}, a run ${ms} ms): ${seen.join(', ')}`);
      await expectSameAsWhole(method, name);
    }
  });
});

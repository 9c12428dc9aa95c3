/**
 * `webgrpo train`. In-process runs load the scripted model (a deterministic fake, helpers/) through
 * the CLI's model-loading seam; one spawned run uses the real CLI on the bundled tiny ONNX model.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { run, type TrainIo } from '../../lib/cli/train.js';
import { importRun, MemoryStore, type Policy } from '../../lib/index.js';
import { scriptedPolicy } from './helpers/scripted-policy.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'webgrpo-cli-'));
  dirs.push(dir);
  return dir;
}

function io(options: { policy?: () => Policy; interactive?: boolean; interrupt?: AbortSignal } = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const loaded: Array<string | undefined> = [];
  const value: TrainIo = {
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    interactive: options.interactive ?? false,
    interrupt: options.interrupt ?? new AbortController().signal,
    loadModel: async (model) => {
      loaded.push(model);
      return (options.policy ?? scriptedPolicy)();
    },
  };
  return { io: value, out: () => out.join(''), err: () => err.join(''), loaded };
}

const libraryOf = async (file: string) => JSON.stringify(JSON.parse(await readFile(file, 'utf8')).steps.at(-1).payload.library);

describe('webgrpo train (in process, scripted model)', () => {
  it('prints help and rejects bad usage with exit code 2', async () => {
    const help = io();
    expect(await run(['--help'], help.io)).toBe(0);
    expect(help.out()).toContain('--resume <id>');
    for (const argv of [[], ['--task', 'x', '--dataset', 'y'], ['--bogus'], ['--task', 'alphabetise', '--epochs', 'two']]) {
      const bad = io();
      expect(await run([...argv, '--store', await tempDir()], bad.io)).toBe(2);
      expect(bad.err()).toMatch(/webgrpo train --help/);
    }
    // Flags that disagree are refused before any model is loaded.
    for (const argv of [['--export-format', 'yaml'], ['--method', 'gradient', '--peft-out', 'adapter']]) {
      const bad = io();
      expect(await run(['--task', 'alphabetise', ...argv, '--store', await tempDir()], bad.io)).toBe(2);
      expect(bad.loaded).toEqual([]);
    }
    const unknown = io();
    expect(await run(['--task', 'chess', '--store', await tempDir()], unknown.io)).toBe(1);
    expect(unknown.err()).toMatch(/unknown task "chess"/);
  });

  it('trains on a task with a progress bar, an epoch table and the final library, and writes --out', async () => {
    const dir = await tempDir();
    const out = await tempDir(); // --out never inside the store
    const cli = io({ interactive: true });
    const args = ['--task', 'alphabetise', '--size', '4', '--seed', '1', '--epochs', '2', '--group', '4', '--batch', '2', '--mode', 'lessons'];
    expect(await run([...args, '--model', 'some-model', '--store', dir, '--run-id', 'first', '--out', join(out, 'run.json')], cli.io)).toBe(0);
    expect(cli.loaded).toEqual(['some-model']);
    expect(cli.err()).toMatch(/\] 8\/8 items · epoch 2\/2 · step 4\/4 · ETA/);
    expect(cli.err()).toMatch(/epoch +mean reward +std +zero-spread +library +ops +warnings\n1 +\d\.\d{3}/);
    expect(cli.err()).toMatch(/warning \(step \d+, item \d+, (critique|group-update)\)/);
    expect(cli.out()).toMatch(/Experience library \(\d+ lessons, 0 exemplars\):\n {2}\[G0\] /);
    const imported = await importRun(new MemoryStore(), await readFile(join(out, 'run.json'), 'utf8'));
    expect(imported).toMatchObject({ id: 'first', status: 'completed' });

    const list = io();
    expect(await run(['--list', '--store', dir], list.io)).toBe(0);
    expect(list.out()).toMatch(/first +completed +alphabetise +lessons +4\/4/);
  });

  it('stops on Ctrl-C with a resume hint, and --resume finishes with the same library', async () => {
    const dir = await tempDir();
    const out = await tempDir(); // --out never inside the store
    const args = ['--task', 'alphabetise', '--size', '4', '--seed', '1', '--epochs', '2', '--group', '4', '--batch', '2', '--mode', 'lessons', '--model', 'm'];
    const whole = io();
    expect(await run([...args, '--store', dir, '--run-id', 'whole', '--out', join(out, 'whole.json')], whole.io)).toBe(0);

    const controller = new AbortController();
    let calls = 0;
    const interrupting = (): Policy => {
      const inner = scriptedPolicy();
      return {
        ...inner,
        generateGroup: async (o) => {
          if (++calls === 30) controller.abort();
          return inner.generateGroup(o);
        },
      };
    };
    const first = io({ policy: interrupting, interrupt: controller.signal });
    expect(await run([...args, '--store', dir, '--run-id', 'cut'], first.io)).toBe(130);
    expect(first.err()).toContain(`Resume with: webgrpo train --resume cut --store ${dir}`);

    const resumed = io();
    expect(await run(['--resume', 'cut', '--store', dir, '--out', join(out, 'cut.json')], resumed.io)).toBe(0);
    // The run remembers the model it was started with (the loaded policy's own name).
    expect(resumed.loaded).toEqual(['scripted-alphabetise']);
    expect(resumed.err()).toContain('Resuming run cut');
    expect(await libraryOf(join(out, 'cut.json'))).toBe(await libraryOf(join(out, 'whole.json')));
  });

  it('records a run, replays it offline to the same library, and trains on a JSONL dataset', async () => {
    const dir = await tempDir();
    await writeFile(
      join(dir, 'data.jsonl'),
      ['{"messages": [{"role": "user", "content": "Put these words in alphabetical order: pear, fig, kiwi."}], "answer": "Sorted: fig, kiwi, pear"}', '{"prompt": "Put these words in alphabetical order: b, a.", "answer": "Sorted: a, b"}'].join('\n'),
    );
    const args = ['--dataset', join(dir, 'data.jsonl'), '--reward', 'exact,similarity', '--epochs', '2', '--group', '3', '--mode', 'lessons'];
    const recorded = io();
    expect(await run([...args, '--model', 'm', '--store', join(dir, 'runs'), '--record', join(dir, 'rec.json'), '--out', join(dir, 'a.json')], recorded.io), recorded.err()).toBe(0);
    const replayed = io();
    expect(await run([...args, '--replay', join(dir, 'rec.json'), '--store', join(dir, 'runs'), '--out', join(dir, 'b.json')], replayed.io)).toBe(0);
    expect(replayed.loaded).toEqual([]);
    expect(replayed.err()).toMatch(/Model: scripted-alphabetise \(recorded/);
    expect(await libraryOf(join(dir, 'b.json'))).toBe(await libraryOf(join(dir, 'a.json')));
    const bad = io();
    expect(await run([...args.slice(0, 2), '--reward', 'vibes', '--model', 'm', '--store', join(dir, 'runs')], bad.io)).toBe(2);
  });

  it('never lets model text drive the terminal', async () => {
    const dir = await tempDir();
    const inner = scriptedPolicy();
    const hostile = (): Policy => ({
      ...inner,
      generateGroup: async (o) => {
        const group = await inner.generateGroup(o);
        group.completions.forEach((c, i) => (c.text = `Sorted: ${'x'.repeat(i * 5)}\u001b[2J\u001b]0;pwned\u0007`));
        return group;
      },
    });
    const cli = io({ policy: hostile });
    expect(await run(['--task', 'alphabetise', '--size', '2', '--epochs', '1', '--group', '3', '--mode', 'exemplars', '--model', 'm', '--store', dir], cli.io)).toBe(0);
    expect(cli.out()).toMatch(/answer: Sorted: ·\[2J·\]0;pwned·/);
    expect(cli.out()).not.toMatch(/[\u0000-\u0008\u000b-\u001f]/);
  });

  it('refuses to run a run that is running', async () => {
    const dir = await tempDir();
    const { openFileStore } = await import('../../lib/node.js');
    const args = ['--task', 'alphabetise', '--size', '2', '--epochs', '1', '--group', '2', '--model', 'm', '--store', dir, '--run-id', 'busy'];
    const controller = new AbortController();
    const first = io({ interrupt: controller.signal, policy: () => ({ ...scriptedPolicy(), generateGroup: (o) => (controller.abort(), scriptedPolicy().generateGroup(o)) }) });
    expect(await run(args, first.io)).toBe(130);
    const store = await openFileStore(dir);
    const lock = await store.lockRun('busy');
    const second = io();
    expect(await run(['--resume', 'busy', '--store', dir], second.io)).toBe(1);
    expect(second.err()).toMatch(/already running in this process|already running in process/);
    await lock.release();
  });
});

describe('webgrpo train (spawned, the bundled tiny ONNX model)', () => {
  it('runs offline end to end and prints the library', async () => {
    const dir = await tempDir();
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'lib/cli/main.ts'), 'train', '--task', 'alphabetise', '--size', '3', '--epochs', '2', '--group', '3', '--store', join(dir, 'runs'), '--out', join(dir, 'run.json')],
      { cwd: root, encoding: 'utf8', timeout: 120_000 },
    );
    expect(result.stderr).toContain('using --method exemplars');
    expect(result.status).toBe(0);
    expect(result.stderr).toMatch(/Model: .*webgrpo-tiny \(cpu/);
    expect(result.stderr).toMatch(/step 2\/2/);
    expect(result.stdout).toMatch(/Experience library \(0 lessons, [1-3] exemplars\)/);
    const exported = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8'));
    expect(exported.run.status).toBe('completed');
    expect(exported.steps).toHaveLength(2);
    expect(exported.steps[0].items[0].rollouts[0].logprobs.length).toBeGreaterThan(0);
  });
});

describe('webgrpo train --method (every method through the registry, the bundled tiny ONNX model)', () => {
  it.each([
    ['gradient', /loss/, 'gradient', []],
    ['lora', /loss/, 'lora', ['--rank', '2', '--alpha', '4', '--target-modules', 'q_proj,v_proj,down_proj']],
    ['router', /zero-spread/, 'router', []],
  ])('--method %s trains, stores and resumes through the registry', async (method, table, kind, extra) => {
    const dir = await tempDir();
    const args = ['train', '--method', method, ...extra, '--task', 'digits', '--size', '4', '--epochs', '2', '--group', '4', '--batch', '2', '--max-new-tokens', '6', '--store', join(dir, 'runs'), '--run-id', 'm', '--out', join(dir, 'run.json')];
    const result = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'lib/cli/main.ts'), ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/step 4\/4/);
    expect(result.stderr).toMatch(table);
    const exported = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8'));
    expect(exported.run).toMatchObject({ kind, status: 'completed' });
    expect(exported.steps).toHaveLength(4);
    if (kind === 'lora') expect(exported.run.config.lora).toMatchObject({ r: 2, alpha: 4, targetModules: ['q_proj', 'v_proj', 'down_proj'] });
    // A finished run resumes to nothing left to do, through the same registry.
    const again = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'lib/cli/main.ts'), 'train', '--resume', 'm', '--store', join(dir, 'runs')], { cwd: root, encoding: 'utf8', timeout: 120_000 });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toContain(`Resuming run m (digits, ${kind})`);
  }, 120_000);

  it('checks --out and --export-jsonl before training: not inside the store, not one file, an existing writable folder', async () => {
    const dir = await tempDir();
    const store = join(dir, 'runs');
    const args = ['--task', 'alphabetise', '--size', '4', '--epochs', '1', '--group', '2', '--batch', '2', '--mode', 'lessons', '--model', 'm', '--store', store];
    const first = io();
    expect(await run([...args, '--run-id', 'ok1'], first.io)).toBe(0);
    const storeJson = await readFile(join(store, 'store.json'), 'utf8');
    const runJson = await readFile(join(store, 'runs', 'ok1', 'run.json'), 'utf8');
    await mkdir(join(dir, 'a-folder'));
    const cases: Array<[string[], RegExp]> = [
      [['--out', join(store, 'runs', 'ok1', 'run.json')], /--out .* lies inside the store folder/],
      [['--out', join(store, 'store.json')], /--out .* lies inside the store folder/],
      [['--export-jsonl', join(store, 'x.jsonl')], /--export-jsonl .* lies inside the store folder/],
      [['--out', join(dir, 'same.jsonl'), '--export-jsonl', join(dir, 'same.jsonl')], /name the same file/],
      [['--out', join(dir, 'a-folder')], /is a folder/],
      [['--out', join(dir, 'no-such-folder', 'run.json')], /its folder .* does not exist/],
    ];
    for (const [extra, message] of cases) {
      const cli = io();
      expect(await run([...args, '--run-id', 'second', ...extra], cli.io), extra.join(' ')).toBe(2);
      expect(cli.err()).toMatch(message);
      // Refused before any model was loaded or anything trained.
      expect(cli.loaded).toEqual([]);
    }
    expect(await readFile(join(store, 'store.json'), 'utf8')).toBe(storeJson);
    expect(await readFile(join(store, 'runs', 'ok1', 'run.json'), 'utf8')).toBe(runJson);
    const list = io();
    expect(await run(['--list', '--store', store], list.io)).toBe(0);
    expect(list.out()).not.toMatch(/second/);
    expect(list.out()).toMatch(/ok1 +completed/);
  });

  it('refuses an unknown method', async () => {
    const dir = await tempDir();
    const { io: value, err } = io();
    expect(await run(['--method', 'weights', '--task', 'digits', '--store', dir], value)).toBe(2);
    expect(err()).toMatch(/Unknown method "weights"; choose lessons, exemplars, gradient, lora, router/);
  });

  it('shows each prompt its closest experiences with --retrieve, and refuses library flags elsewhere', async () => {
    const dir = await tempDir();
    const out = await tempDir(); // --out never inside the store
    const cli = io();
    const args = ['--task', 'alphabetise', '--size', '4', '--seed', '1', '--epochs', '2', '--group', '4', '--batch', '2', '--method', 'exemplars', '--retrieve', '1', '--max-exemplars', '3'];
    expect(await run([...args, '--store', dir, '--run-id', 'near', '--out', join(out, 'run.json')], cli.io)).toBe(0);
    const bundle = JSON.parse(await readFile(join(out, 'run.json'), 'utf8'));
    expect(bundle.run.config).toMatchObject({ retrieveExperiences: 1, maxExemplars: 3 });
    for (const step of bundle.steps) for (const item of step.items) expect(item.experienceIds.length).toBeLessThanOrEqual(1);
    for (const argv of [['--method', 'gradient', '--retrieve', '1'], ['--method', 'exemplars', '--retrieve', 'one'], ['--method', 'exemplars', '--retrieve', '-1']]) {
      const { io: value, err } = io();
      expect(await run([...argv, '--task', 'digits', '--store', await tempDir()], value)).not.toBe(0);
      expect(err()).toMatch(/retrieve/);
    }
  });

  it('refuses adapter flags the method does not take', async () => {
    for (const argv of [['--method', 'gradient', '--alpha', '4'], ['--method', 'exemplars', '--rank', '2'], ['--method', 'gradient', '--rank', 'two']]) {
      const { io: value, err } = io();
      expect(await run([...argv, '--task', 'digits', '--store', await tempDir()], value)).toBe(2);
      expect(err()).toMatch(/--(alpha|rank)/);
    }
  });
});

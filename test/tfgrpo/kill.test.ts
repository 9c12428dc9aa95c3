/**
 * A run killed mid-step (SIGKILL, no chance to clean up) and resumed in a new process ends with the
 * same library, byte for byte, as the uninterrupted run on the same recorded model outputs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { AlreadyRunningError, replayPolicy, resumeTrainingFreeGrpo } from '../../lib/index.js';
import { openFileStore } from '../../lib/node.js';
import { recordReference, standardShape, timeless } from './helpers/fixture.js';

const child = fileURLToPath(new URL('./helpers/child-run.ts', import.meta.url));
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

interface Line {
  type: string;
  step?: number;
  reused?: boolean;
  status?: string;
  library?: unknown;
}

function start(args: string[]): { process: ChildProcess; lines: AsyncIterable<string>; exit: Promise<number | null> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr?.on('data', (chunk) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      if (code) console.error(stderr);
      resolve(code);
    }),
  );
  return { process: proc, lines: createInterface({ input: proc.stdout! }), exit };
}

describe('kill -9 mid-step, then resume in a new process', () => {
  it('ends with the same library as the uninterrupted run', async () => {
    const reference = await recordReference(standardShape());
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-kill-'));
    dirs.push(dir);
    const recording = join(dir, 'recording.json');
    await writeFile(recording, JSON.stringify(reference.recording));
    const storeDir = join(dir, 'runs');

    // 1. Start; once step 2 has finished one item, check the lock from here, then kill -9.
    const first = start(['start', storeDir, recording, 'killed', '15']);
    let seenInStep2 = 0;
    for await (const text of first.lines) {
      const line = JSON.parse(text) as Line;
      if (line.type === 'item-end' && line.step === 2 && ++seenInStep2 === 1) {
        const store = await openFileStore(storeDir);
        const other = resumeTrainingFreeGrpo('killed', { policy: replayPolicy(reference.recording), rewards: standardShape().rewards, store });
        const error = await other.result().then(() => undefined, (e: unknown) => e);
        expect(error).toBeInstanceOf(AlreadyRunningError);
        expect((error as Error).message).toContain(`process ${first.process.pid}`);
        first.process.kill('SIGKILL');
        break;
      }
    }
    expect(await first.exit).toBeNull();

    const store = await openFileStore(storeDir);
    expect((await store.lastStep('killed'))?.step).toBe(1);
    expect((await store.getItemResults('killed', 2)).length).toBeGreaterThanOrEqual(1);
    expect((await store.getRun('killed'))?.status).toBe('running');
    expect(JSON.parse(await readFile(join(storeDir, 'runs', 'killed', 'lock'), 'utf8')).pid).toBe(first.process.pid);

    // 2. Resume in a fresh process: the dead process's lock is taken over, finished items reused.
    const second = start(['resume', storeDir, recording, 'killed', '0']);
    const lines: Line[] = [];
    for await (const text of second.lines) lines.push(JSON.parse(text) as Line);
    expect(await second.exit).toBe(0);
    expect(lines[0]).toMatchObject({ type: 'run-start' });
    expect(lines.filter((l) => l.type === 'item-end' && l.reused).length).toBeGreaterThanOrEqual(1);
    const end = lines.at(-1);
    expect(end).toMatchObject({ type: 'run-end', status: 'completed' });
    expect(JSON.stringify(end?.library)).toBe(reference.libraryJson);

    const bundle = await store.readBundle('killed');
    expect(bundle.steps.map(timeless)).toEqual(reference.bundle.steps.map(timeless));
    expect(bundle.pending).toEqual([]);
  });
});

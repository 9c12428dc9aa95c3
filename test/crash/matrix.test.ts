/**
 * The crash matrix: each loop (training-free with its export after every epoch, router, gradient, lora)
 * is killed with SIGKILL just before each of its commits to disk in turn (every file renamed or
 * linked into place, removed, or appended), then resumed (or started again, when the kill came
 * before the run existed). Every one ends with the uninterrupted run's records: the same steps,
 * library, router or adapter, nothing pending, and (training-free) the same exported JSONL.
 * Bounded: one short run per kill point, every third point by default (WEBGRPO_CRASH_STRIDE=1 for
 * all of them); the kill child is a real process.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEpochExport, openFileStore } from '../../lib/node.js';
import { recordReference, standardShape } from '../tfgrpo/helpers/fixture.js';
import { comparable, leftovers } from './compare.js';
import { drive, EXPORT, type LoopKind } from './runs.js';

const child = fileURLToPath(new URL('./child.ts', import.meta.url));
let dir: string;
let recordingPath: string;
let recording: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-crash-'));
  recording = JSON.stringify((await recordReference(standardShape())).recording);
  recordingPath = join(dir, 'recording.json');
  await writeFile(recordingPath, recording);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

function runChild(kind: LoopKind, store: string, exportPath: string, k: number): Promise<{ code: number | null; signal: string | null; stdout: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, kind, store, recordingPath, exportPath, String(k)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.on('exit', (code, signal) => resolve({ code, signal, stdout }));
  });
}

/**
 * The commits to kill before: every `WEBGRPO_CRASH_STRIDE`-th (default 3, which keeps the three
 * loops near a minute together; 1 runs every commit point), always the first and the last.
 */
function killPoints(commits: number): number[] {
  const stride = Number(process.env.WEBGRPO_CRASH_STRIDE ?? 3);
  const points = new Set<number>([commits]);
  for (let k = 1; k <= commits; k += Math.max(1, stride)) points.add(k);
  return [...points].sort((a, b) => a - b);
}

describe.each(['training-free', 'router', 'gradient', 'lora'] as const)('the %s loop killed at each commit', (kind) => {
  it('resumes to the uninterrupted run every time', { timeout: 300_000 }, async () => {
    const reference = join(dir, `${kind}-reference`);
    const whole = await runChild(kind, reference, `${reference}.jsonl`, 0);
    expect(whole.code).toBe(0);
    const { status, commits } = JSON.parse(whole.stdout) as { status: string; commits: number };
    expect(status).toBe('completed');
    const expected = comparable(await (await openFileStore(reference)).readBundle('r'));
    const expectedJsonl = kind === 'training-free' ? await readFile(`${reference}.jsonl`, 'utf8') : '';
    expect(commits).toBeGreaterThan(10);

    for (const k of killPoints(commits)) {
      const root = join(dir, `${kind}-${k}`);
      const exportPath = `${root}.jsonl`;
      const killed = await runChild(kind, root, exportPath, k);
      expect([k, killed.signal]).toEqual([k, 'SIGKILL']);

      const store = await openFileStore(root);
      const run = await store.getRun('r');
      const resume = kind === 'training-free' ? { store, runId: 'r' } : undefined;
      const exported = kind === 'training-free' ? await openEpochExport(exportPath, EXPORT, run ? resume : undefined) : undefined;
      const handles = { recording, ...(exported ? { onEpoch: exported.hook } : {}) };
      if (run === undefined) expect([k, await drive(kind, 'start', store, handles)]).toEqual([k, 'completed']);
      else if (run.status !== 'completed') expect([k, await drive(kind, 'resume', store, handles)]).toEqual([k, 'completed']);
      await exported?.sink.flush();
      await store.close();

      expect([k, comparable(await store.readBundle('r'))]).toEqual([k, expected]);
      if (kind === 'training-free') expect([k, await readFile(exportPath, 'utf8')]).toEqual([k, expectedJsonl]);
      // Opening the store again clears what the kill left behind.
      await openFileStore(root);
      expect([k, await leftovers(root)]).toEqual([k, []]);
      await rm(root, { recursive: true, force: true });
    }
  });
});

/**
 * A run's lock file (`<root>/runs/<runId>/lock`: `{ pid, hostname, token }` of the process running
 * it), so two processes never drive one run. It is created exclusively; a lock whose process is gone
 * (killed mid-run, on this host) is taken over once; releasing removes it only while it is still ours.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { rm } from 'node:fs/promises';
import { AlreadyRunningError } from '../../errors.js';
import { codeOf, guard, processAlive, readJson, writeAtomic } from './io.js';

/** Takes the lock at `path` for `runId`; resolves with the function that releases it. */
export async function takeLockFile(path: string, runId: string): Promise<() => Promise<void>> {
  const token = randomUUID();
  const mine = { pid: process.pid, hostname: hostname(), token, startedAt: new Date().toISOString() };
  await guard(`lock run "${runId}"`, async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        await writeAtomic(path, mine, { exclusive: true });
        return;
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error;
      }
      const holder = await readJson<{ pid: number; hostname: string }>(path);
      const stale = holder !== undefined && holder.hostname === hostname() && !processAlive(holder.pid);
      if ((holder === undefined || stale) && attempt === 0) {
        // The process that held it is gone (killed mid-run): the lock is ours to take.
        await rm(path, { force: true });
        continue;
      }
      const where = holder ? `in process ${holder.pid} on ${holder.hostname}` : 'in another process';
      throw new AlreadyRunningError(
        runId,
        `Run "${runId}" is already running ${where}. Wait for it to finish or stop it; if that process is gone, delete ${path}.`,
      );
    }
  });
  return async () => {
    const holder = await readJson<{ token?: string }>(path).catch(() => undefined);
    if (holder?.token === token) await rm(path, { force: true });
  };
}

/**
 * A run's lock in an IndexedDB store: the Web Locks API where it exists (held by this tab, released
 * by the browser when the tab closes or crashes), otherwise a lease row renewed by a heartbeat.
 */
import { alreadyRunning } from '../rules.js';
import type { Tx } from './database.js';

/** One read-write transaction on the leases (the store's own, so errors map as every write's). */
export type LeaseWrite = (names: ['leases'], what: string, body: (tx: Tx<['leases'], 'readwrite'>) => Promise<void>) => Promise<void>;

export interface LeaseOptions {
  write: LeaseWrite;
  /** Lease length in ms; renewed every third of it. */
  leaseMs: number;
  /** Whether the store was closed (no renewal, no release then). */
  closed: () => boolean;
}

/** Takes the lock of `runId` in database `dbName`; resolves to its release. */
export async function lockRunInIdb(dbName: string, runId: string, lease: LeaseOptions): Promise<() => Promise<void>> {
  return webLocks() ? webLock(dbName, runId) : leaseLock(runId, lease);
}

async function webLock(dbName: string, runId: string): Promise<() => Promise<void>> {
  let unlock!: () => void;
  const held = new Promise<void>((resolve) => (unlock = resolve));
  const acquired = await new Promise<boolean>((resolve, reject) => {
    (webLocks() as LockManager)
      .request(`webgrpo:${dbName}:${runId}`, { ifAvailable: true }, async (lock) => {
        resolve(lock !== null);
        if (lock) await held;
      })
      .catch(reject);
  });
  if (!acquired) throw alreadyRunning(runId, 'in another tab or window');
  return async () => unlock();
}

async function leaseLock(runId: string, { write, leaseMs, closed }: LeaseOptions): Promise<() => Promise<void>> {
  const owner = crypto.randomUUID();
  const claim = () =>
    write(['leases'], `claim run "${runId}"`, async (tx) => {
      const lease = await tx.objectStore('leases').get(runId);
      if (lease && lease.owner !== owner && lease.expiresAt > Date.now()) {
        throw alreadyRunning(runId, `in another tab or process (its lease runs until ${new Date(lease.expiresAt).toISOString()})`);
      }
      await tx.objectStore('leases').put({ runId, owner, expiresAt: Date.now() + leaseMs });
    });
  await claim();
  const heartbeat = setInterval(() => {
    if (closed()) return;
    // A failed renewal (another holder took over an expired lease) surfaces at the next claim.
    claim().catch(() => undefined);
  }, leaseMs / 3);
  (heartbeat as { unref?: () => void }).unref?.();
  return async () => {
    clearInterval(heartbeat);
    if (closed()) return;
    await write(['leases'], `release run "${runId}"`, async (tx) => {
      const lease = await tx.objectStore('leases').get(runId);
      if (lease?.owner === owner) await tx.objectStore('leases').delete(runId);
    });
  };
}

function webLocks(): LockManager | undefined {
  return (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
}

/**
 * `FileStore`: runs kept as JSON files in a folder, for Node (the CLI). Entry point `webgrpo/node`.
 *
 *   <root>/store.json                      { format, schemaVersion }
 *   <root>/runs/<runId>/run.json           the run record
 *   <root>/runs/<runId>/items.json         its dataset
 *   <root>/runs/<runId>/steps/000007.json  one committed step (items, stats, the method's payload)
 *   <root>/runs/<runId>/pending/000008-0002.json   a finished item of the step in progress
 *   <root>/runs/<runId>/adapters/000007.json      runs that train an adapter: its checkpoint after step 7
 *   <root>/runs/<runId>/lock               { pid, hostname } of the process running it
 *   <root>/groups/<groupId>.json           an ask/tell session's group (`openFileSessionStore`)
 *
 * Every file is written to a temporary name, flushed and then renamed (or hard-linked, where it must
 * not exist yet) into place, so a killed process leaves each file whole or absent. A step is one file,
 * so `commitStep` is atomic; the run's progress is read from the step files themselves. A step's
 * adapter checkpoint is written before its step file and read by the last step's number, so
 * a checkpoint without its step (a crash in between) is never read, and is replaced on the retry.
 * Each record is written with checksums of its fields (../checksum.ts; items.json: each item), checked
 * as it is read (../integrity.ts); a record without them is damage (seal.ts seals a store written
 * before them, on its owner's word).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { NotFoundError, StoreCorruptError, StoreError } from '../../errors.js';
import { checkRunFolderName, codeOf, guard, isFolder, listJson, readJson, removeStaleTemporaries, writeAtomic } from './io.js';
import { takeLockFile } from './lock.js';
import { sealed } from '../checksum.js';
import { checkAdapter, checkCompleted, checkItems, checkPending, checkProgress, checkRun, checkStep, checkStepNumbers, remedy, requireSeal } from '../integrity.js';
import { alreadyRunning, bundleExists, byRecentUpdate, checkNextStep, damagedAmong, holdRun, keepsAdapter, leftOut, runExists, withEvaluation, withStatus } from '../rules.js';
import { upgradeV4Step } from '../records/upgrade-v4.js';
import type { RecordLookup } from '../records/kind.js';
import type { EvaluationRecord, ItemResult, RunBundle, RunRecord, StepExtras, StepRecord, StoredCheckpoint } from '../records/index.js';
import type { DatasetItem } from '../../core/dataset.js';
import type { DamagedRun, RunLock, RunStatusPatch, StepRange, Store } from '../store.js';

const FORMAT = 'webgrpo.file-store';
/** How a file store written before checksums is sealed, for the message that finds a record without them. */
const FILE_SEAL = '`webgrpo train --store <folder> --seal-unverified` (sealUnverified in webgrpo/node)';

/** Layout migrations; a new folder runs them all. Append, never edit. */
const MIGRATIONS: ReadonlyArray<(root: string, records: RecordLookup) => Promise<void>> = [
  // v1: the runs folder.
  async (root) => {
    await mkdir(join(root, 'runs'), { recursive: true });
  },
  // v2: step records hold the method's fields in `payload` (each step file rewritten in place,
  // atomically; a rerun after a crash skips the files already done, a damaged file is left to
  // the integrity check of the read).
  async (root, records) => {
    for (const name of (await readdir(join(root, 'runs'))).filter((n) => !n.startsWith('.'))) {
      const dir = join(root, 'runs', name);
      const run = await readJson<{ kind?: unknown }>(join(dir, 'run.json')).catch(() => undefined);
      for (const file of await listJson(join(dir, 'steps'))) {
        const path = join(dir, 'steps', file);
        // A damaged file stays as it is: reading the run reports it, naming the file.
        const step = await readJson<unknown>(path).catch(() => undefined);
        const upgraded = upgradeV4Step(step, run?.kind, records);
        if (upgraded !== step) await writeAtomic(path, upgraded);
      }
    }
  },
];
/** The folder layout version this webgrpo writes to store.json: one per migration, older folders are migrated on open. */
export const FILE_STORE_VERSION = MIGRATIONS.length;

/** What a file store reads its runs with. */
export interface FileStoreOptions {
  /** The run kinds it reads (their records: checks, migrations); `webgrpo/node` passes the registered methods'. */
  records: RecordLookup;
}

/** Opens (creating or migrating) a store in `root`. */
export async function openFileStore(root: string, options: FileStoreOptions): Promise<FileStore> {
  await openStoreFolder(root, options.records);
  return new FileStore(root, options);
}

/**
 * Creates `root` as a store folder, or checks that it is one and brings its layout up to date
 * (reading its runs with `records`). The run store and the session store (`openFileSessionStore`)
 * share the folder.
 */
export async function openStoreFolder(root: string, records: RecordLookup): Promise<void> {
  await guard(`open the store in ${root}`, async () => {
    await mkdir(root, { recursive: true });
    const meta = await readJson<{ format?: string; schemaVersion?: number }>(join(root, 'store.json'));
    let version = 0;
    if (meta) {
      if (meta.format !== FORMAT || typeof meta.schemaVersion !== 'number') {
        throw new StoreError(`${join(root, 'store.json')} is not a webgrpo run store; choose another folder.`);
      }
      version = meta.schemaVersion;
    } else if (!(await onlyHalfCreated(root))) {
      throw new StoreError(`${root} is not empty and has no store.json; choose an empty or new folder for runs.`);
    }
    if (version > FILE_STORE_VERSION) {
      throw new StoreError(`${root} was written by a newer webgrpo (store version ${version}, this one knows ${FILE_STORE_VERSION}); upgrade webgrpo.`);
    }
    for (let v = version; v < FILE_STORE_VERSION; v++) await MIGRATIONS[v](root, records);
    if (version !== FILE_STORE_VERSION) await writeAtomic(join(root, 'store.json'), { format: FORMAT, schemaVersion: FILE_STORE_VERSION });
    await removeStaleTemporaries(root);
  });
}

/**
 * Whether a folder without store.json holds nothing, or only what creating a store writes before
 * store.json (an empty `runs/`, a temporary store.json): a creation that was killed, to finish.
 */
async function onlyHalfCreated(root: string): Promise<boolean> {
  for (const name of await readdir(root)) {
    if (name === 'runs' && (await readdir(join(root, 'runs')).catch(() => ['not a folder'])).length === 0) continue;
    if (/^store\.json\.\d+\.[0-9a-f-]{36}\.tmp$/.test(name)) continue;
    return false;
  }
  return true;
}

/** A `Store` in a folder (`openFileStore`, Node): one JSON file per record, written atomically and checksummed, a run held by a lock file while it trains. */
export class FileStore implements Store {
  readonly kind = 'file';
  readonly root: string;
  readonly #records: RecordLookup;
  readonly #held = new Set<string>();

  constructor(root: string, options: FileStoreOptions) {
    this.root = root;
    this.#records = options.records;
  }

  async createRun(run: RunRecord, items: DatasetItem[]): Promise<void> {
    const dir = this.#dir(run.id);
    await guard(`create run "${run.id}"`, async () => {
      // A damaged run under the id (its folder without a readable run.json) throws here: it is never replaced.
      if (await this.getRun(run.id)) throw runExists(run.id);
      await this.#writeRunDir(dir, { run, items, steps: [], pending: [] });
    });
  }

  /** Undefined for an unknown run; a run folder that lost its run.json is a `StoreCorruptError`. */
  async getRun(runId: string): Promise<RunRecord | undefined> {
    checkRunFolderName(runId);
    const dir = this.#dir(runId);
    const path = join(dir, 'run.json');
    const run = await guard(`read run "${runId}"`, () => readJson<unknown>(path));
    if (run !== undefined) return requireSeal(run, path, runId, FILE_SEAL, () => checkRun(run, runId, path, this.#records));
    // Run folders are built whole under another name and renamed into place, so one without its record lost it.
    if (await guard(`read run "${runId}"`, () => isFolder(dir))) {
      throw new StoreCorruptError(path, `${path} is missing, but ${dir} holds the rest of run "${runId}"; ${remedy(runId)}.`);
    }
    return undefined;
  }

  async listRuns(): Promise<RunRecord[]> {
    return guard('list runs', async () => {
      const runs = await Promise.all((await this.#runNames()).map((name) => this.getRun(name).catch(leftOut)));
      return runs.filter((run): run is RunRecord => run !== undefined).sort(byRecentUpdate);
    });
  }

  async listDamaged(): Promise<DamagedRun[]> {
    return damagedAmong(await guard('list runs', () => this.#runNames()), (runId) => this.readBundle(runId));
  }

  async setRunStatus(runId: string, patch: RunStatusPatch): Promise<void> {
    const run = await this.#requireRun(runId);
    if (patch.status === 'completed') checkCompleted(run, (await this.#stepNumbers(run)).length, join(this.#dir(runId), 'steps'));
    await guard(`update run "${runId}"`, () => writeAtomic(join(this.#dir(runId), 'run.json'), sealed(withStatus(run, patch))));
  }

  async putEvaluation(runId: string, evaluation: EvaluationRecord): Promise<void> {
    const run = await this.#requireRun(runId);
    await guard(`keep the evaluation of epoch ${evaluation.epoch} of run "${runId}"`, () => writeAtomic(join(this.#dir(runId), 'run.json'), sealed(withEvaluation(run, evaluation))));
  }

  async deleteRun(runId: string): Promise<void> {
    checkRunFolderName(runId);
    await guard(`delete run "${runId}"`, async () => {
      const trash = join(this.root, 'runs', `.trash-${runId}-${randomUUID()}`);
      try {
        await rename(this.#dir(runId), trash);
      } catch (error) {
        if (codeOf(error) === 'ENOENT') return;
        throw error;
      }
      await rm(trash, { recursive: true, force: true });
    });
  }

  async getItems(runId: string): Promise<DatasetItem[]> {
    const run = await this.#requireRun(runId);
    const path = join(this.#dir(runId), 'items.json');
    const items = await guard(`read the dataset of run "${runId}"`, () => readJson<unknown>(path));
    return requireSeal(items, path, runId, FILE_SEAL, () => checkItems(items, run, path));
  }

  async putItemResult(runId: string, result: ItemResult): Promise<void> {
    await this.#requireRun(runId);
    await guard(`record item ${result.index} of step ${result.step}`, () =>
      writeAtomic(join(this.#dir(runId), 'pending', `${pad(result.step, 6)}-${pad(result.position, 4)}.json`), sealed(result)),
    );
  }

  async getItemResults(runId: string, step: number): Promise<ItemResult[]> {
    const run = await this.#requireRun(runId);
    const last = (await this.#stepNumbers(run)).length;
    return guard(`read the items of step ${step}`, async () => {
      const dir = join(this.#dir(runId), 'pending');
      // Results of a committed step are leftovers of a crash before their removal: never read.
      if (step <= last) return [];
      return this.#readPending(run, (await listJson(dir)).filter((name) => name.startsWith(`${pad(step, 6)}-`)), step - 1);
    });
  }

  async commitStep(runId: string, step: StepRecord, extras: StepExtras = {}): Promise<void> {
    const run = await this.#requireRun(runId);
    const dir = this.#dir(runId);
    await guard(`commit step ${step.step}`, async () => {
      const last = (await this.#stepNumbers(run)).at(-1) ?? 0;
      checkNextStep(runId, last, step.step);
      const adapterPath = join(dir, 'adapters', `${pad(step.step, 6)}.json`);
      if (extras.adapter) await writeAtomic(adapterPath, sealed(extras.adapter));
      // The commit point: a hard link fails if the step exists, so two loops can never both commit it.
      try {
        await writeAtomic(join(dir, 'steps', `${pad(step.step, 6)}.json`), sealed(step), { exclusive: true });
      } catch (error) {
        if (codeOf(error) !== 'EEXIST') throw error;
        throw new StoreError(`Step ${step.step} of run "${runId}" was committed by another loop.`, { cause: error });
      }
      if (extras.adapter) {
        // Only the latest checkpoint is kept.
        for (const name of await listJson(join(dir, 'adapters'))) {
          if (Number(name.slice(0, 6)) < step.step) await rm(join(dir, 'adapters', name), { force: true });
        }
      }
      const pendingDir = join(dir, 'pending');
      for (const name of await listJson(pendingDir)) {
        if (Number(name.slice(0, 6)) <= step.step) await rm(join(pendingDir, name), { force: true });
      }
      await writeAtomic(join(dir, 'run.json'), sealed({ ...run, updatedAt: step.committedAt }));
    });
  }

  async getStep(runId: string, step: number): Promise<StepRecord | undefined> {
    const run = await this.getRun(runId);
    return run && this.#readStep(run, step);
  }

  async listSteps(runId: string, range: StepRange = {}): Promise<StepRecord[]> {
    const run = await this.#requireRun(runId);
    const numbers = (await this.#stepNumbers(run)).filter((n) => n >= (range.from ?? 1) && n <= (range.to ?? Infinity));
    return Promise.all(numbers.map((n) => this.#requireStep(run, n)));
  }

  async lastStep(runId: string): Promise<StepRecord | undefined> {
    const run = await this.#requireRun(runId);
    const last = (await this.#stepNumbers(run)).at(-1);
    return last === undefined ? undefined : this.#requireStep(run, last);
  }

  async getAdapter(runId: string): Promise<StoredCheckpoint | undefined> {
    const run = await this.#requireRun(runId);
    const last = (await this.#stepNumbers(run)).at(-1);
    if (last === undefined) return undefined;
    const path = join(this.#dir(runId), 'adapters', `${pad(last, 6)}.json`);
    const adapter = await guard(`read the adapter of run "${runId}"`, () => readJson<unknown>(path));
    // Every step of a run whose kind keeps an adapter commits its checkpoint: without it a resume would restart the adapter from scratch.
    if (adapter === undefined && keepsAdapter(run.kind, this.#records)) {
      throw new StoreCorruptError(path, `${path} is missing: step ${last} of run "${runId}" was committed with it; restore it from a backup or an export of the run, or delete the run and start it again.`);
    }
    return adapter === undefined ? undefined : requireSeal(adapter, path, runId, FILE_SEAL, () => checkAdapter(adapter, run, last, path, this.#records));
  }

  async lockRun(runId: string): Promise<RunLock> {
    await this.#requireRun(runId);
    return holdRun(this.#held, runId, 'in this process', () => takeLockFile(join(this.#dir(runId), 'lock'), runId));
  }

  async readBundle(runId: string): Promise<RunBundle> {
    const run = await this.#requireRun(runId);
    const [items, steps, adapter] = await Promise.all([this.getItems(runId), this.listSteps(runId), this.getAdapter(runId)]);
    const pendingDir = join(this.#dir(runId), 'pending');
    const pending = await guard('read pending items', async () =>
      this.#readPending(run, (await listJson(pendingDir)).filter((name) => Number(name.slice(0, 6)) > steps.length), steps.length),
    );
    return { run, items, steps, pending, ...(adapter ? { adapter } : {}) };
  }

  async writeBundle(bundle: RunBundle, options: { replace?: boolean } = {}): Promise<void> {
    const id = bundle.run.id;
    if (this.#held.has(id)) throw alreadyRunning(id, 'in this process');
    const dir = this.#dir(id);
    await guard(`import run "${id}"`, async () => {
      // The folder is the run (built whole, then renamed into place): a damaged one is replaced too, which is how an export restores it.
      const exists = await isFolder(dir);
      if (exists && !options.replace) throw bundleExists(id);
      await this.#writeRunDir(dir, bundle, exists);
    });
  }

  async close(): Promise<void> {
    for (const runId of this.#held) await rm(join(this.#dir(runId), 'lock'), { force: true });
    this.#held.clear();
  }

  /** Builds a run folder under a temporary name and renames it into place. */
  async #writeRunDir(dir: string, bundle: RunBundle, replace = false): Promise<void> {
    const runs = join(this.root, 'runs');
    const temp = join(runs, `.new-${process.pid}-${randomUUID()}-${bundle.run.id}`);
    try {
      await mkdir(join(temp, 'steps'), { recursive: true });
      await mkdir(join(temp, 'pending'), { recursive: true });
      await writeAtomic(join(temp, 'items.json'), bundle.items.map((item) => sealed(item)));
      for (const step of bundle.steps) await writeAtomic(join(temp, 'steps', `${pad(step.step, 6)}.json`), sealed(step));
      for (const r of bundle.pending) await writeAtomic(join(temp, 'pending', `${pad(r.step, 6)}-${pad(r.position, 4)}.json`), sealed(r));
      if (bundle.adapter) await writeAtomic(join(temp, 'adapters', `${pad(bundle.adapter.step, 6)}.json`), sealed(bundle.adapter));
      await writeAtomic(join(temp, 'run.json'), sealed(bundle.run));
      if (replace) {
        const trash = join(runs, `.trash-${bundle.run.id}-${randomUUID()}`);
        await rename(dir, trash);
        await rename(temp, dir);
        await rm(trash, { recursive: true, force: true });
      } else {
        await rename(temp, dir);
      }
    } catch (error) {
      await rm(temp, { recursive: true, force: true });
      throw error;
    }
  }

  /** The committed steps' numbers, 1..N: a gap, or more than the run's schedule has, is a `StoreCorruptError`. */
  async #stepNumbers(run: RunRecord): Promise<number[]> {
    const dir = join(this.#dir(run.id), 'steps');
    const names = await listJson(dir);
    const numbers = names.map((name) => Number(name.slice(0, -'.json'.length))).filter(Number.isInteger).sort((a, b) => a - b);
    checkStepNumbers(numbers, run.id, `The step files in ${dir}`);
    checkProgress(run, numbers.length, `The step files in ${dir}`);
    return numbers;
  }

  async #readStep(run: RunRecord, step: number): Promise<StepRecord | undefined> {
    const path = join(this.#dir(run.id), 'steps', `${pad(step, 6)}.json`);
    const record = await guard(`read step ${step}`, () => readJson<unknown>(path));
    return record === undefined ? undefined : requireSeal(record, path, run.id, FILE_SEAL, () => checkStep(record, step, run, path, this.#records));
  }

  /** The pending files `names` (in order of position), checked to be items of step `last + 1`; a file removed meanwhile is left out. */
  async #readPending(run: RunRecord, names: string[], last: number): Promise<ItemResult[]> {
    const dir = join(this.#dir(run.id), 'pending');
    const read = await Promise.all(names.sort().map(async (name) => [join(dir, name), await readJson<unknown>(join(dir, name))] as const));
    return read.filter(([, r]) => r !== undefined).map(([path, r]) => requireSeal(r, path, run.id, FILE_SEAL, () => checkPending(r, last, run, path)));
  }

  /** The run folders' names (a folder may have lost its run.json). */
  async #runNames(): Promise<string[]> {
    const entries = await readdir(join(this.root, 'runs'), { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
  }

  async #requireStep(run: RunRecord, step: number): Promise<StepRecord> {
    const record = await this.#readStep(run, step);
    if (record) return record;
    const path = join(this.#dir(run.id), 'steps', `${pad(step, 6)}.json`);
    throw new StoreCorruptError(path, `${path} disappeared while it was read; check that no other program deletes files in the store.`);
  }

  async #requireRun(runId: string): Promise<RunRecord> {
    const run = await this.getRun(runId);
    if (!run) throw new NotFoundError(`No run "${runId}" in ${join(this.root, 'runs')}.`);
    return run;
  }

  #dir(runId: string): string {
    checkRunFolderName(runId);
    return join(this.root, 'runs', runId);
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

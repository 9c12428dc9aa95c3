/**
 * `FileSessionStore`: an ask/tell session's groups as JSON files, for Node (`webgrpo serve --store`).
 * It lives in the same folder as the file run store (`<root>/groups/<groupId>.json`), and writes
 * each group the way that store writes a step: to a temporary file, flushed, then renamed into
 * place, so a killed process leaves every group whole (its last completed `put`) or absent.
 */
import { join } from 'node:path';
import { InvalidInputError } from '../../errors.js';
import type { GroupRecord, SessionStore } from '../records/session.js';
import { openStoreFolder, type FileStoreOptions } from './store.js';
import { guard, listJson, readJson, writeAtomic } from './io.js';
import { sealed } from '../checksum.js';
import { checkGroup } from '../integrity.js';
import { WritesInFlight } from '../rules.js';

/** Opens (creating or migrating, its runs read with `options.records`) the store folder `root` and returns its group store. */
export async function openFileSessionStore(root: string, options: FileStoreOptions): Promise<FileSessionStore> {
  await openStoreFolder(root, options.records);
  return new FileSessionStore(root);
}

export class FileSessionStore implements SessionStore {
  readonly root: string;
  readonly #dir: string;
  readonly #writes = new WritesInFlight();

  constructor(root: string) {
    this.root = root;
    this.#dir = join(root, 'groups');
  }

  async put(group: GroupRecord): Promise<void> {
    const path = this.#path(group.id);
    await this.#writes.track(guard(`store group "${group.id}"`, () => writeAtomic(path, sealed(group))));
  }

  async get(id: string): Promise<GroupRecord | undefined> {
    const path = this.#path(id);
    return guard(`read group "${id}"`, () => readGroup(path, id));
  }

  /** Every group, oldest first (by `createdAt`, then id). */
  async list(): Promise<GroupRecord[]> {
    return guard('list the stored groups', async () => {
      const names = await listJson(this.#dir);
      const groups = await Promise.all(names.map((name) => readGroup(join(this.#dir, name), groupId(name))));
      return groups.filter((g): g is GroupRecord => g !== undefined).sort(byCreation);
    });
  }

  /** Resolves when every `put` started so far is on disk (each is, once it resolves). */
  async flush(): Promise<void> {
    await this.#writes.flush();
  }

  #path(id: string): string {
    return join(this.#dir, `${fileName(id)}.json`);
  }
}

/** The group in the file at `path`, checked to be group `id` as it was written; undefined if there is none. */
async function readGroup(path: string, id: string): Promise<GroupRecord | undefined> {
  const stored = await readJson<unknown>(path, 'restore it from a backup or delete that file');
  return stored === undefined ? undefined : checkGroup(stored, id, path, 'restore it from a backup or delete that file (its group is then unknown to the server)');
}

/** The group id a file name stands for (`fileName` undone). */
function groupId(name: string): string {
  const bytes = name.slice(0, -'.json'.length).replace(/%([0-9A-F]{2})|(.)/g, (_all, hex: string | undefined, ch: string | undefined) => (hex ? String.fromCharCode(parseInt(hex, 16)) : ch!));
  return new TextDecoder().decode(Uint8Array.from(bytes, (c) => c.charCodeAt(0)));
}

/**
 * A group id as a file name: lowercase letters, digits, `_` and `-` stay as they are (the ids the
 * server makes, `chatcmpl-<hex>`, are readable on disk); every other byte is `%XX`. No name can then
 * climb out of the folder, hide behind a dot, or collide with another on a case-insensitive disk.
 */
function fileName(id: string): string {
  if (typeof id !== 'string' || id === '') throw new InvalidInputError('groupId', 'must be a non-empty string.');
  const name = Array.from(new TextEncoder().encode(id), (byte) => {
    const ch = String.fromCharCode(byte);
    return /[a-z0-9_-]/.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }).join('');
  if (name.length > 200) throw new InvalidInputError('groupId', `is too long to keep as a file (${id.length} characters); use a shorter id.`);
  return name;
}

export function byCreation(a: GroupRecord, b: GroupRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

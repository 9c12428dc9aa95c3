/** The default `SessionStore`: groups in a Map, oldest evicted first past an optional cap. */
import { InvalidInputError } from '../../errors.js';
import type { GroupRecord, SessionStore } from '../records/session.js';

export interface MemorySessionStoreOptions {
  /**
   * Keep at most this many groups; putting a new one evicts the oldest. Default: unbounded. A
   * long-running server should set it (and log told groups elsewhere) so memory stays flat.
   */
  maxGroups?: number;
}

export class MemorySessionStore implements SessionStore {
  readonly #groups = new Map<string, GroupRecord>();
  readonly #maxGroups: number;

  constructor(options: MemorySessionStoreOptions = {}) {
    this.#maxGroups = options.maxGroups ?? Infinity;
    if (!(this.#maxGroups >= 1)) {
      throw new InvalidInputError('maxGroups', `must be >= 1, got ${options.maxGroups}`);
    }
  }

  async put(group: GroupRecord): Promise<void> {
    if (!this.#groups.has(group.id) && this.#groups.size >= this.#maxGroups) {
      const oldest = this.#groups.keys().next();
      if (!oldest.done) this.#groups.delete(oldest.value);
    }
    this.#groups.set(group.id, group);
  }

  async get(id: string): Promise<GroupRecord | undefined> {
    const group = this.#groups.get(id);
    return group && structuredClone(group);
  }

  async list(): Promise<GroupRecord[]> {
    return structuredClone([...this.#groups.values()]);
  }
}

/**
 * The server's default group store: answered groups in memory, bounded by an estimate of their
 * size in bytes (and by their number), the oldest evicted first. A group of 64 completions with 20
 * alternatives per token is megabytes in the JS heap, so a count alone lets a busy server run out
 * of memory; the bytes bound keeps it flat. Ids of recently evicted groups are remembered, so a late
 * tell or look-up learns that its group is gone (410) rather than that it never existed (404).
 */
import { getHeapStatistics } from 'node:v8';
import { InvalidInputError } from '../errors.js';
import type { CompletionRecord, GroupRecord, SessionStore } from '../store/records/session.js';
import { ApiError } from './api-error.js';

export interface GroupStoreOptions {
  /** Most estimated bytes kept. Default: a quarter of this process's heap limit. */
  maxBytes?: number;
  /** Most groups kept. Default 10000. */
  maxGroups?: number;
}

export interface GroupStoreStats {
  groups: number;
  bytes: number;
  maxBytes: number;
  evicted: number;
}

/** Evicted ids remembered for the 410; older ones get the plain 404 (whose message names eviction too). */
const REMEMBERED_EVICTIONS = 10_000;

export class BoundedGroupStore implements SessionStore {
  readonly maxBytes: number;
  readonly maxGroups: number;
  readonly #groups = new Map<string, { group: GroupRecord; bytes: number }>();
  readonly #evicted = new Set<string>();
  #bytes = 0;
  #evictions = 0;

  constructor(options: GroupStoreOptions = {}) {
    this.maxBytes = options.maxBytes ?? Math.floor(getHeapStatistics().heap_size_limit / 4);
    this.maxGroups = options.maxGroups ?? 10_000;
    if (!(Number.isInteger(this.maxBytes) && this.maxBytes >= 1)) {
      throw new InvalidInputError('maxGroupBytes', `must be a positive integer number of bytes, got ${options.maxBytes}.`);
    }
    if (!(Number.isInteger(this.maxGroups) && this.maxGroups >= 1)) {
      throw new InvalidInputError('maxGroups', `must be a positive integer, got ${options.maxGroups}.`);
    }
  }

  get stats(): GroupStoreStats {
    return { groups: this.#groups.size, bytes: this.#bytes, maxBytes: this.maxBytes, evicted: this.#evictions };
  }

  /** Stores the group as the newest; the oldest others go until both bounds hold (a group alone is always kept). */
  async put(group: GroupRecord): Promise<void> {
    const previous = this.#groups.get(group.id);
    if (previous) {
      this.#bytes -= previous.bytes;
      this.#groups.delete(group.id);
    }
    const bytes = groupBytes(group);
    this.#groups.set(group.id, { group, bytes });
    this.#bytes += bytes;
    this.#evicted.delete(group.id);
    while (this.#groups.size > 1 && (this.#bytes > this.maxBytes || this.#groups.size > this.maxGroups)) {
      const [id, oldest] = this.#groups.entries().next().value!;
      this.#groups.delete(id);
      this.#bytes -= oldest.bytes;
      this.#evictions += 1;
      this.#evicted.add(id);
      if (this.#evicted.size > REMEMBERED_EVICTIONS) this.#evicted.delete(this.#evicted.values().next().value!);
    }
  }

  async get(id: string): Promise<GroupRecord | undefined> {
    const entry = this.#groups.get(id);
    if (entry) return structuredClone(entry.group);
    if (this.#evicted.has(id)) {
      throw new ApiError(
        410,
        `Group ${id} was evicted: the server keeps the latest ${this.maxBytes} bytes of groups and this one is older. Tell rewards sooner, or start the server with a larger group memory (maxGroupBytes, --max-group-bytes) or a --store folder.`,
        { type: 'not_found_error', code: 'group_evicted' },
      );
    }
    return undefined;
  }

  async list(): Promise<GroupRecord[]> {
    return structuredClone([...this.#groups.values()].map((entry) => entry.group));
  }
}

// Sizes in V8's 64-bit heap, rounded up: an object's header and a pointer per field, a boxed double,
// an array's header and backing store, a string's header (two bytes per character, the worst case).
const OBJECT = 24;
const FIELD = 8;
const DOUBLE = 16;
const ARRAY = 48;
const STRING = 24;

function stringBytes(text: string | undefined): number {
  return text === undefined ? 0 : STRING + 2 * text.length;
}

function numbersBytes(values: readonly unknown[] | undefined): number {
  return values === undefined ? 0 : ARRAY + (FIELD + DOUBLE) * values.length;
}

/** Small parts (messages, sampling, meta, feedback) by their JSON length. */
function plainBytes(value: unknown): number {
  return value === undefined ? 0 : OBJECT + 2 * JSON.stringify(value).length;
}

function completionBytes(c: CompletionRecord): number {
  let bytes = OBJECT + 12 * FIELD + stringBytes(c.id) + stringBytes(c.text) + numbersBytes(c.tokenIds) + numbersBytes(c.logprobs);
  bytes += numbersBytes(c.rewards) + 2 * DOUBLE;
  if (c.topLogprobs) {
    bytes += ARRAY + FIELD * c.topLogprobs.length;
    for (const alternatives of c.topLogprobs) bytes += ARRAY + alternatives.length * (FIELD + OBJECT + 2 * FIELD + 2 * DOUBLE);
  }
  return bytes;
}

/** An estimate, on the high side, of the bytes a group holds in the JS heap. */
export function groupBytes(group: GroupRecord): number {
  let bytes = OBJECT + 12 * FIELD + stringBytes(group.id) + stringBytes(group.prompt) + stringBytes(group.promptText) + stringBytes(group.model);
  bytes += numbersBytes(group.promptTokenIds) + plainBytes(group.messages) + plainBytes(group.sampling) + plainBytes(group.meta) + plainBytes(group.feedback);
  bytes += ARRAY + FIELD * group.completions.length;
  for (const c of group.completions) bytes += completionBytes(c);
  return bytes;
}

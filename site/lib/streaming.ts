/**
 * Groups that can be watched while they are written: token events are collected per row and the
 * rows' text decoded at most every `intervalMs`, so the page shows the group growing (a hub model
 * on WebAssembly can take a minute per group). Everything else passes through unchanged, so the
 * run stores the same policy info and produces the same rollouts.
 */
import type { GenerateGroupOptions, GroupResult, Policy } from '../../lib/index.js';

export interface GroupStream {
  /** `group`: rollouts; `critic`: a critic's reply (one row, from a method that has a critic). */
  kind: 'group' | 'critic';
  rows: string[];
  tokens: number[];
}

type Generate = (options: GenerateGroupOptions) => Promise<GroupResult>;
type Decode = (tokenIds: number[]) => Promise<string> | string;

export interface WatchOptions {
  /** How often the rows are decoded for the page. */
  intervalMs?: number;
  /**
   * The method asks a critic (lessons): its one-row calls are the critic's. Elsewhere a one-row
   * call is a rollout (the router samples each variant's completions apart).
   */
  hasCritic?: boolean;
}

/** `generate`, reporting each group's rows as they grow (then null when the group is done). */
export function watchedGenerate(generate: Generate, decode: Decode, onUpdate: (stream: GroupStream | null) => void, { intervalMs = 150, hasCritic = false }: WatchOptions = {}): Generate {
  return async (options) => {
    if (options.onToken) return generate(options);
    const kind = hasCritic && options.groupSize === 1 ? 'critic' : 'group';
    const ids: number[][] = Array.from({ length: options.groupSize }, () => []);
    let done = false;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const flush = async () => {
      timer = null;
      const rows = await Promise.all(ids.map((row) => decode([...row])));
      if (!done) onUpdate({ kind, rows, tokens: ids.map((row) => row.length) });
    };
    onUpdate({ kind, rows: ids.map(() => ''), tokens: ids.map(() => 0) });
    try {
      return await generate({
        ...options,
        onToken: (event) => {
          ids[event.row]?.push(event.tokenId);
          timer ??= setTimeout(() => void flush().catch(() => undefined), intervalMs);
        },
      });
    } finally {
      done = true;
      if (timer) clearTimeout(timer);
      onUpdate(null);
    }
  };
}

/** A policy whose groups are watched (unchanged when it cannot decode, so has nothing to show). */
export function streamingPolicy(policy: Policy, onUpdate: (stream: GroupStream | null) => void, watch: WatchOptions = {}): Policy {
  const decode = policy.decode?.bind(policy);
  const generate = policy.generateGroup.bind(policy);
  return {
    info: policy.info,
    generateGroup: decode ? watchedGenerate(generate, decode, onUpdate, watch) : generate,
    ...(policy.scoreCompletions ? { scoreCompletions: policy.scoreCompletions.bind(policy) } : {}),
    ...(policy.encode ? { encode: policy.encode.bind(policy) } : {}),
    ...(decode ? { decode } : {}),
    dispose: () => policy.dispose(),
  };
}

/**
 * Exemplar mode (the @polyweave/grpo tool's `{ item, output, score }` library): no critic. The best output of each
 * group, when it beats its group's mean and a threshold, is kept as a few-shot example, so a model
 * too small to write a critique still learns from its own best attempts.
 */
import type { AppliedOperation, ApplyResult, ExemplarCandidate, ExemplarEntry, ExperienceLibrary, SkippedOperation } from './types.js';

/** Most exemplars an exemplar-mode library keeps when `maxExemplars` is not given. */
export const DEFAULT_MAX_EXEMPLARS = 8;
export const DEFAULT_MAX_EXEMPLAR_LENGTH = 2000;

export interface ExemplarSelectOptions {
  /** The best output must score at least this. Default 0 (any positive advantage is enough). */
  threshold?: number;
}

/**
 * The group's exemplar candidate: its best-scoring output (the first on ties), provided it scores
 * strictly above the group's mean and at least `threshold`. Unscorable rows (NaN) are ignored.
 */
export function selectExemplar(
  item: string,
  outputs: readonly string[],
  rewards: readonly number[],
  options: ExemplarSelectOptions = {},
): ExemplarCandidate | undefined {
  const threshold = options.threshold ?? 0;
  let best = -1;
  let sum = 0;
  let count = 0;
  rewards.forEach((reward, row) => {
    if (!Number.isFinite(reward)) return;
    sum += reward;
    count += 1;
    if (best < 0 || reward > rewards[best]) best = row;
  });
  if (best < 0) return undefined;
  const mean = sum / count;
  const score = rewards[best];
  if (!(score > mean) || score < threshold) return undefined;
  return { item, output: outputs[best], score };
}

export interface ApplyExemplarsOptions {
  step: number;
  /** Largest number of exemplars kept; the lowest-scoring are evicted. Default 8. */
  maxExemplars?: number;
  /** Longest output kept, in characters. Default 2000. */
  maxLength?: number;
}

/**
 * Adds candidates in order: one exemplar per item (a better score replaces the old one), then
 * evicts the lowest scores (oldest first on ties) above `maxExemplars`. Deterministic.
 */
export function applyExemplars(
  library: ExperienceLibrary,
  candidates: readonly ExemplarCandidate[],
  options: ApplyExemplarsOptions,
): ApplyResult {
  const maxExemplars = options.maxExemplars ?? DEFAULT_MAX_EXEMPLARS;
  const maxLength = options.maxLength ?? DEFAULT_MAX_EXEMPLAR_LENGTH;
  const { step } = options;
  const applied: AppliedOperation[] = [];
  const skipped: SkippedOperation[] = [];
  const exemplars: ExemplarEntry[] = library.exemplars.map((e) => ({ ...e }));
  let nextId = library.nextId;

  candidates.forEach((candidate, index) => {
    const output = candidate.output.trim();
    if (output === '' || !Number.isFinite(candidate.score)) {
      skipped.push({ index, operation: candidate, reason: output === '' ? 'empty output' : 'score is not finite' });
      return;
    }
    const truncated = output.length > maxLength;
    const text = truncated ? `${output.slice(0, maxLength - 1)}…` : output;
    const existing = exemplars.find((e) => e.item === candidate.item);
    if (existing) {
      if (candidate.score <= existing.score) {
        skipped.push({ index, operation: candidate, reason: `not better than ${existing.id} (${existing.score})` });
        return;
      }
      applied.push({ operation: 'UPDATE', id: existing.id, content: text, previous: existing.output, index, ...(truncated ? { truncated } : {}) });
      existing.output = text;
      existing.score = candidate.score;
      existing.updatedStep = step;
      return;
    }
    const id = `E${nextId++}`;
    exemplars.push({ id, item: candidate.item, output: text, score: candidate.score, createdStep: step, updatedStep: step });
    applied.push({ operation: 'ADD', id, content: text, index, ...(truncated ? { truncated } : {}) });
  });

  while (exemplars.length > maxExemplars) {
    let worst = 0;
    for (let i = 1; i < exemplars.length; i++) {
      const a = exemplars[i];
      const b = exemplars[worst];
      if (a.score < b.score || (a.score === b.score && a.updatedStep < b.updatedStep)) worst = i;
    }
    const [evicted] = exemplars.splice(worst, 1);
    applied.push({ operation: 'DELETE', id: evicted.id, previous: evicted.output, index: candidates.length });
  }

  return {
    library: { nextId, entries: library.entries.map((e) => ({ ...e })), exemplars },
    applied,
    skipped,
  };
}

/**
 * The experience library: what Training-Free GRPO learns instead of weights. Two kinds of entry
 * live side by side: short general *lessons* written by a critic (the paper's experiences), and
 * *exemplars*, the best outputs the policy itself produced (the @polyweave/grpo tool's `{ item, output, score }`),
 * used as few-shot examples by models too small to write a critique.
 *
 * Steps are numbered from 1; an entry created or updated at step 0 came with the initial library.
 */

/** A lesson: `[G3] Check the sign of every term before adding.` */
export interface ExperienceEntry {
  /** `G<n>`, stable for the life of a run; never reused after a delete. */
  id: string;
  text: string;
  createdStep: number;
  updatedStep: number;
}

/** A kept output: the best attempt of a group, shown to later prompts as a worked example. */
export interface ExemplarEntry {
  /** `E<n>`, from the same counter as lessons. */
  id: string;
  /** The task text the output answered (the item's prompt or last user message). */
  item: string;
  output: string;
  /** Its combined reward. */
  score: number;
  createdStep: number;
  updatedStep: number;
}

export interface ExperienceLibrary {
  /** The next numeric id to hand out (ids are `G<n>` / `E<n>`, one counter). */
  nextId: number;
  entries: ExperienceEntry[];
  exemplars: ExemplarEntry[];
}

export type OperationKind = 'ADD' | 'UPDATE' | 'DELETE' | 'NONE';

/** One edit proposed by a critic. The paper's names (add / modify / delete / keep) are aliases. */
export interface ExperienceOperation {
  operation: OperationKind;
  /** The entry an UPDATE or DELETE targets (`G3`). */
  id?: string;
  /** The lesson text of an ADD or UPDATE. */
  content?: string;
}

/** What an operation did to the library. */
export interface AppliedOperation {
  operation: 'ADD' | 'UPDATE' | 'DELETE';
  id: string;
  /** The entry's text after the operation (absent for DELETE). */
  content?: string;
  /** The text before an UPDATE or DELETE. */
  previous?: string;
  /** Set when an UPDATE of an unknown id was turned into an ADD. */
  convertedFrom?: 'UPDATE';
  /** The content was longer than the cap and was cut. */
  truncated?: boolean;
  /** Index of the operation in the batch it came from. */
  index: number;
}

/** An operation that changed nothing, and why (duplicate, unknown id, empty content...). */
export interface SkippedOperation {
  index: number;
  /** The operation as received: untrusted critic output, kept for display and audit. */
  operation: unknown;
  reason: string;
}

export interface ApplyResult {
  library: ExperienceLibrary;
  applied: AppliedOperation[];
  skipped: SkippedOperation[];
}

/** Candidate exemplar from one group: its best output. */
export interface ExemplarCandidate {
  item: string;
  output: string;
  score: number;
}

/** A new experience library with no lessons and no exemplars, where a run starts. */
export function emptyLibrary(): ExperienceLibrary {
  return { nextId: 0, entries: [], exemplars: [] };
}

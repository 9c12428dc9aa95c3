/**
 * What the store knows of one kind of run: the checks of its config, of the method's fields of its
 * run record, steps and rollouts, and of its adapter checkpoint, and its v4 steps' upgrade. Each
 * method has one (its `record`, in its folder's record.ts); a store is handed them when it is opened.
 */
export interface RecordKind {
  kind: string;
  /** Checks a stored config of this kind (throws `InvalidInputError` naming the field). */
  config(value: unknown, at: string): void;
  /** The method's own fields of the run record, by name: checked on import and normalised on every read. */
  runFields?: Record<string, RunField>;
  /** Checks a step's payload (`step.payload`, whose `kind` is already checked). */
  step?(payload: Record<string, unknown>, at: string, config: Record<string, unknown>): void;
  /**
   * A payload as a store reads it back: the cheap shape checks a resume relies on, and the payload
   * normalised (default: as stored). Throws `InvalidInputError`, which the store reports as corrupt.
   */
  read?(payload: Record<string, unknown>, at: string): Record<string, unknown>;
  /** Checks the method's fields of a rollout (by default a rollout has none). */
  rollout?(rollout: Record<string, unknown>, at: string, config: Record<string, unknown>): void;
  /**
   * Runs of this kind keep an adapter checkpoint (committed with every step): checks one and
   * returns the step it was taken after. Absent: the kind keeps none.
   */
  adapter?(checkpoint: unknown, at: string): number;
  /** The payload of a schema v4 step from its fields besides the common ones (default: upgrade-v4.ts). */
  fromV4?(fields: Record<string, unknown>): Record<string, unknown>;
}

/** One method field of a run record: what it must be (errors say `is not <description>`), and its reader (throws `InvalidInputError`). */
export interface RunField {
  description: string;
  read(value: unknown, at: string): unknown;
}

/** The record kinds a store reads, by kind: a `Map` of them, or the methods' registry (`methodRecords`). */
export interface RecordLookup {
  get(kind: string): RecordKind | undefined;
  keys(): Iterable<string>;
}

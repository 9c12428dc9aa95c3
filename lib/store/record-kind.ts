import type { ExperienceLibrary } from '../experience/types.js';

/**
 * What the store knows of one kind of run: how to check its stored config, the method's fields of
 * its step records and rollouts, and whether it keeps an adapter checkpoint. Each method has one
 * (its `record`); the driver registers it when a run of the method starts or resumes, so imports
 * and stores check a new method's runs without knowing it.
 */
export interface RecordKind {
  kind: string;
  /** Checks a stored config of this kind (throws `InvalidInputError` naming the field). */
  config(value: unknown, at: string): void;
  /** Checks a step's payload (`step.payload`, whose `kind` is already checked). */
  step?(payload: Record<string, unknown>, at: string, config: Record<string, unknown>): void;
  /**
   * A payload as a store reads it back: the cheap shape checks a resume relies on, and the payload
   * normalised (default: as stored). Throws `InvalidInputError`, which the store reports as corrupt.
   */
  read?(payload: Record<string, unknown>, at: string): Record<string, unknown>;
  /** The experience library after the step, for methods whose steps keep one. */
  library?(payload: Record<string, unknown>): ExperienceLibrary;
  /** Checks the method's fields of a rollout (by default a rollout has none). */
  rollout?(rollout: Record<string, unknown>, at: string, config: Record<string, unknown>): void;
  /**
   * Runs of this kind keep an adapter checkpoint (committed with every step): checks one and
   * returns the step it was taken after. Absent: the kind keeps none.
   */
  adapter?(checkpoint: unknown, at: string): number;
}

/**
 * AdamW's state over every A and B of a LoRA adapter (the update itself is lib/train/optimizer.ts's
 * `adamwTensors`, with one gradient norm over all of them, as TRL clips over all trainable
 * parameters).
 */
import { InvalidInputError } from '../errors.js';
import { loraTensors, zerosLike, type LoraAdapter } from './adapter.js';

/** The optimizer's state: what a store commits with the adapter so a run resumes exactly. */
export interface LoraOptimizerState {
  /** Updates taken (AdamW's t). */
  step: number;
  /** First and second moments, in the adapter's layout. */
  m: LoraAdapter;
  v: LoraAdapter;
}

/** `state` checked against the adapter's layout, or a fresh one (no updates, zero moments). */
export function loraOptimizerState(adapter: LoraAdapter, state?: LoraOptimizerState): LoraOptimizerState {
  if (!state) return { step: 0, m: zerosLike(adapter), v: zerosLike(adapter) };
  const sizes = loraTensors(adapter).map((t) => t.length);
  const fits = (moments: LoraAdapter | undefined) => !!moments && moments.layers?.length === adapter.layers.length && loraTensors(moments).every((t, k) => t.length === sizes[k]) && loraTensors(moments).length === sizes.length;
  if (!fits(state.m) || !fits(state.v) || !Number.isInteger(state.step) || state.step < 0) throw new InvalidInputError('optimizer state', "does not have the adapter's layout.");
  return state;
}

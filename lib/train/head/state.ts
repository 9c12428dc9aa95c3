/**
 * The adapter's weights with the optimizer's state, as host copies: what engines read and load
 * and checkpoints encode. Plain data, so the core (stores, file format) can use it without any
 * model runtime's types.
 */
export interface AdapterState {
  a: Float32Array;
  b: Float32Array;
  /** AdamW's first and second moments and its update count. */
  m: { a: Float32Array; b: Float32Array };
  v: { a: Float32Array; b: Float32Array };
  updates: number;
}

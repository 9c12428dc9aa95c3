/**
 * One forward pass of a transformers.js-style decoder session, driven directly: `rows` sequences
 * of `length` new tokens each on top of a shared-length cache. Rows never need padding (a group
 * shares its prompt, and scoring pads after the last real token, which a causal model never
 * looks at), so the attention mask is all ones and positions continue from the cache.
 */
import type { KvOps, KvState } from './kv-cache.js';
import type { LogitsOps } from './logits-ops.js';
import type { OrtSession, OrtTensor, OrtTensorClass } from './runtime.js';

export interface ForwardResult {
  logits: OrtTensor;
  kv: KvState;
}

export class Decoder {
  /** Forward passes run (for tests and benchmarks: a group costs one prefill plus one per step). */
  runs = 0;

  constructor(
    private readonly session: OrtSession,
    private readonly Tensor: OrtTensorClass,
    readonly kv: KvOps,
    readonly logits: LogitsOps,
  ) {}

  /**
   * Runs `tokens` (rows x length, row-major) after `past` and returns the logits and the grown
   * cache. `past` stays valid; the caller disposes it. With `lastOnly`, models that take
   * `num_logits_to_keep` compute logits for the last position only (logits.dims[1] is then 1).
   */
  async forward(tokens: ArrayLike<number>, rows: number, length: number, past: KvState, lastOnly = false): Promise<ForwardResult> {
    const total = past.length + length;
    const inputIds = new BigInt64Array(rows * length);
    for (let i = 0; i < inputIds.length; i++) inputIds[i] = BigInt(tokens[i]);
    const positions = new BigInt64Array(rows * length);
    for (let r = 0; r < rows; r++) for (let t = 0; t < length; t++) positions[r * length + t] = BigInt(past.length + t);

    const available: Record<string, OrtTensor> = {
      input_ids: new this.Tensor('int64', inputIds, [rows, length]),
      attention_mask: new this.Tensor('int64', new BigInt64Array(rows * total).fill(1n), [rows, total]),
      position_ids: new this.Tensor('int64', positions, [rows, length]),
      // 0 keeps every position.
      num_logits_to_keep: new this.Tensor('int64', BigInt64Array.of(lastOnly ? 1n : 0n), []),
      ...past.tensors,
    };
    const feeds: Record<string, OrtTensor> = {};
    for (const name of this.session.inputNames) {
      const tensor = available[name];
      if (!tensor) throw new Error(`The decoder expects an input "${name}" that webgrpo does not know how to fill.`);
      feeds[name] = tensor;
    }
    const trimmed = lastOnly && this.session.inputNames.includes('num_logits_to_keep');
    const target = this.logits.target(rows, trimmed ? 1 : length);
    const fetches: Record<string, OrtTensor | null> | undefined = target
      ? Object.fromEntries(this.session.outputNames.map((name) => [name, name === 'logits' ? target : null]))
      : undefined;
    const outputs = await this.session.run(feeds, fetches);
    this.runs++;
    // Outputs nobody reads (for example attention weights of some exports) are released at once.
    for (const [name, tensor] of Object.entries(outputs)) {
      if (name !== 'logits' && !this.kv.layout.presentNames.includes(name)) tensor.dispose();
    }
    return { logits: outputs.logits, kv: this.kv.fromOutputs(outputs, rows, total) };
  }
}

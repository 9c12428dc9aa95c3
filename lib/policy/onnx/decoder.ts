/**
 * One forward pass of a transformers.js-style decoder session, driven directly: `rows` sequences
 * of `length` new tokens each on top of a shared-length cache. Within a group rows never need
 * padding (they share their prompt, and scoring pads after the last real token, which a causal
 * model never looks at). Rows of different prompts batched together (generateGroups) sit
 * right-aligned in the cache: `KvState.pads` says how many leading cache positions of each row are
 * padding, which the attention mask hides and the position ids skip, as transformers.js does
 * for a left-padded batch.
 */
import type { KvOps, KvState } from './kv-cache.js';
import type { LogitsOps } from './logits-ops.js';
import type { OrtRunOptions, OrtSession, OrtTensor, OrtTensorClass } from './ort-types.js';


/**
 * 'incremental': the graph runs any number of new tokens on a cache; 'two-pass': only the two passes
 * transformers.js runs (a prefill from an empty cache, one new token on a cache).
 */
export type PassMode = 'incremental' | 'two-pass';

export interface ForwardResult {
  logits: OrtTensor;
  /** The final hidden state, [rows, length, hidden] like the logits, when the session exposes it. */
  hidden?: OrtTensor;
  kv: KvState;
}

export class Decoder {
  /** Forward passes run (for tests and benchmarks: a group costs one prefill plus one per step). */
  runs = 0;
  /** Which passes the graph supports (probed by passes.ts); set once at load. */
  passMode: PassMode = 'incremental';

  constructor(
    private session: OrtSession,
    private readonly Tensor: OrtTensorClass,
    readonly kv: KvOps,
    readonly logits: LogitsOps,
    /** Name of the hidden-state output (hidden-state.ts), when the graph was rewritten to expose it. */
    readonly hiddenName?: string,
  ) {}

  /**
   * Runs `tokens` (rows x length, row-major) after `past` and returns the logits and the grown
   * cache. `past` stays valid; the caller disposes it. With `lastOnly`, models that take
   * `num_logits_to_keep` compute logits for the last position only (logits.dims[1] is then 1).
   */
  get inputNames(): readonly string[] {
    return this.session.inputNames;
  }

  /** The session passes run on. */
  get current(): OrtSession {
    return this.session;
  }

  /** Inputs every pass is fed besides the decoder's own (an adapter's A and B, lora-inputs.ts). */
  private extraFeeds: Record<string, OrtTensor> = {};

  /** Feeds these float32 tensors to every later pass (replacing the last set). */
  setExtraInputs(inputs: Record<string, { data: Float32Array; dims: readonly number[] }>): void {
    this.extraFeeds = Object.fromEntries(Object.entries(inputs).map(([name, t]) => [name, new this.Tensor('float32', t.data, t.dims)]));
  }

  /** Runs later passes on `session` (the same model's inputs and outputs, other weights); returns the old one. */
  replaceSession(session: OrtSession): OrtSession {
    const old = this.session;
    this.session = session;
    return old;
  }

  /**
   * With `quiet`, a failing run logs nothing: the probes (passes.ts) try passes a graph may not
   * support, and onnxruntime logs a failed node at error severity before it throws.
   */
  async forward(tokens: ArrayLike<number>, rows: number, length: number, past: KvState, lastOnly = false, quiet = false): Promise<ForwardResult> {
    const total = past.length + length;
    const inputIds = new BigInt64Array(rows * length);
    for (let i = 0; i < inputIds.length; i++) inputIds[i] = BigInt(tokens[i]);
    const positions = new BigInt64Array(rows * length);
    const mask = new BigInt64Array(rows * total).fill(1n);
    for (let r = 0; r < rows; r++) {
      const pad = past.pads?.[r] ?? 0;
      mask.fill(0n, r * total, r * total + pad);
      for (let t = 0; t < length; t++) positions[r * length + t] = BigInt(past.length - pad + t);
    }

    const available: Record<string, OrtTensor> = {
      input_ids: new this.Tensor('int64', inputIds, [rows, length]),
      attention_mask: new this.Tensor('int64', mask, [rows, total]),
      position_ids: new this.Tensor('int64', positions, [rows, length]),
      // 0 keeps every position.
      num_logits_to_keep: new this.Tensor('int64', BigInt64Array.of(lastOnly ? 1n : 0n), []),
      ...past.tensors,
      ...this.extraFeeds,
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
    const options: OrtRunOptions | undefined = quiet ? { logSeverityLevel: 4 } : undefined;
    const outputs = await (fetches ? this.session.run(feeds, fetches, options) : this.session.run(feeds, options));
    this.runs++;
    // Outputs nobody reads (for example attention weights of some exports) are released at once.
    for (const [name, tensor] of Object.entries(outputs)) {
      if (name !== 'logits' && name !== this.hiddenName && !this.kv.layout.presentNames.includes(name)) tensor.dispose();
    }
    const hidden = this.hiddenName === undefined ? undefined : outputs[this.hiddenName];
    return { logits: outputs.logits, ...(hidden ? { hidden } : {}), kv: this.kv.fromOutputs(outputs, rows, total, past.pads) };
  }
}

/** Frees a forward pass's logits and hidden state (its cache lives on). */
export function release(result: ForwardResult | undefined): void {
  result?.logits.dispose();
  result?.hidden?.dispose();
}

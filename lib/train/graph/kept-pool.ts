/**
 * Where a step run part by part keeps a part's activations: copies into a few large arrays,
 * reused by every part of a step, instead of the arrays onnxruntime hands back for each run.
 * Those are a few MB each, thousands a step: freed, the C allocator keeps their pages for the
 * process, so the memory a step's kept activations took stayed with it into the sampler's turn
 * (at SmolLM2-135M's shape, 8 x 128 in parts of two rows, sampling peaked at 1569-1668 MB after
 * a step against 1172-1360 with parts of one row). An array of CHUNK_BYTES is mapped on its own
 * by the allocator and given back to the system when it is collected: the pool lets its chunks
 * go at the end of each step (`release`).
 */
import type { GraphRuntime, GraphTensor } from './runtime.js';

/** Above glibc's largest mmap threshold (32 MiB), so each chunk is mapped alone and unmapped when freed. */
const CHUNK_BYTES = 64 * 2 ** 20;

type Floats = Float32Array | Float64Array;

export class KeptPool {
  readonly #chunks: Floats[] = [];
  #chunk = 0;
  #offset = 0;

  readonly #width: number;

  constructor(
    private readonly runtime: GraphRuntime,
    private readonly make: (length: number) => Floats,
  ) {
    this.#width = make(0).BYTES_PER_ELEMENT;
  }

  /** Starts a part: what the last part kept is overwritten from here on. */
  reset(): void {
    this.#chunk = 0;
    this.#offset = 0;
  }

  /**
   * Lets the arrays go at the end of a step: held between steps they would sit beside the
   * sampler's work; dropped, they are unmapped once collected, and the next step maps new ones.
   */
  release(): void {
    this.#chunks.length = 0;
    this.reset();
  }

  /** A copy of `tensor` in the pool, as a tensor of the same shape: floats of the pool's width; anything else (indices) is kept as it is. */
  hold(tensor: GraphTensor): GraphTensor {
    const { data } = tensor;
    if (!(data instanceof Float32Array || data instanceof Float64Array) || data.BYTES_PER_ELEMENT !== this.#width) return tensor;
    const n = data.length;
    let chunk = this.#chunks[this.#chunk];
    if (chunk && this.#offset + n > chunk.length) {
      this.#chunk++;
      this.#offset = 0;
      chunk = this.#chunks[this.#chunk];
    }
    if (!chunk || n > chunk.length) {
      chunk = this.make(Math.max(n, Math.floor(CHUNK_BYTES / data.BYTES_PER_ELEMENT)));
      // A chunk too small for this tensor is replaced, and the chunks after it stay in order.
      this.#chunks[this.#chunk] = chunk;
    }
    const view = chunk.subarray(this.#offset, this.#offset + n);
    view.set(data);
    this.#offset += n;
    return new this.runtime.Tensor(view instanceof Float64Array ? 'float64' : 'float32', view, tensor.dims);
  }
}

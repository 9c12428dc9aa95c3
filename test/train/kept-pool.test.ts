/**
 * The pool a step run part by part keeps a part's activations in (kept-pool.ts): copies of
 * onnxruntime's outputs as views into a few large arrays, the next part's written over the last
 * one's in the same arrays, with real onnxruntime-node tensors.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { KeptPool } from '../../lib/train/graph/kept-pool.js';
import type { GraphRuntime } from '../../lib/train/graph/runtime.js';

const runtime = ort as unknown as GraphRuntime;
const floats = (n: number, from: number) => new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => from + i), [n]);

describe('KeptPool', () => {
  it('holds copies of the tensors, and the next part reuses the same arrays', () => {
    const pool = new KeptPool(runtime, (length) => new Float32Array(length));
    const a = pool.hold(floats(6, 1));
    const b = pool.hold(floats(4, 100));
    expect(Array.from(a.data as Float32Array)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(Array.from(b.data as Float32Array)).toEqual([100, 101, 102, 103]);
    expect(b.dims).toEqual([4]);
    // One array under both, one after the other.
    expect((a.data as Float32Array).buffer).toBe((b.data as Float32Array).buffer);
    expect((b.data as Float32Array).byteOffset).toBe(6 * 4);
    pool.reset();
    const c = pool.hold(floats(6, 50));
    expect((c.data as Float32Array).buffer).toBe((a.data as Float32Array).buffer);
    // Written where the last part's was: the last part's views are not to be read any more.
    expect(Array.from(a.data as Float32Array)).toEqual([50, 51, 52, 53, 54, 55]);
    // Released at the end of a step: the next step's part gets arrays of its own.
    pool.release();
    expect((pool.hold(floats(6, 0)).data as Float32Array).buffer).not.toBe((a.data as Float32Array).buffer);
  });

  it('opens an array of its own for a tensor larger than a chunk, and keeps other types as they are', () => {
    const pool = new KeptPool(runtime, (length) => new Float32Array(length));
    pool.hold(floats(8, 0));
    const large = 17 * 2 ** 20;
    const big = pool.hold(new ort.Tensor('float32', new Float32Array(large).fill(2), [large]));
    expect((big.data as Float32Array).length).toBe(large);
    expect((big.data as Float32Array)[large - 1]).toBe(2);
    const ids = new ort.Tensor('int64', BigInt64Array.from([1n, 2n]), [2]);
    expect(pool.hold(ids)).toBe(ids);
    // A double pool keeps float32 tensors as they are.
    const double = new KeptPool(runtime, (length) => new Float64Array(length));
    const single = floats(3, 0);
    expect(double.hold(single)).toBe(single);
    expect(double.hold(new ort.Tensor('float64', Float64Array.from([1, 2]), [2])).data).toBeInstanceOf(Float64Array);
  });
});

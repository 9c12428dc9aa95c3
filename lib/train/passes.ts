/**
 * The decoder engines' common half (full-depth LoRA, full-parameter): a batch runs as one kept
 * forward pass per group (lib/lora/model.ts on the CPU, lib/lora/webgpu/model.ts on WebGPU), its
 * rows laid end to end in slot order, and the backward hands each pass its rows of d loss / d logp
 * and d loss / d H, adding into one gradient.
 */
import type { EngineStats } from './engine.js';

export interface KeptPass<Grad> {
  logprobs: number[][];
  entropies: number[][];
  backward(dlogps: ReadonlyArray<ArrayLike<number>>, grad: Grad, dentropies?: ReadonlyArray<ArrayLike<number>>): void | Promise<void>;
  /** Frees what the pass holds outside the JS heap (a WebGPU pass's buffers) without a backward. */
  dispose?(): void;
}

/** The passes' per-token numbers, group after group, in one flat slot order. */
export function passStats(passes: ReadonlyArray<KeptPass<unknown>>): EngineStats {
  const rows = passes.flatMap((p) => p.logprobs);
  const count = rows.reduce((n, row) => n + row.length, 0);
  const logps = new Float64Array(count);
  const entropies = new Float64Array(count);
  let slot = 0;
  for (const pass of passes) {
    pass.logprobs.forEach((row, i) => {
      logps.set(row, slot);
      entropies.set(pass.entropies[i], slot);
      slot += row.length;
    });
  }
  return { logps, entropies };
}

/** Runs every pass's backward into `grad` with its slots of the sensitivities; frees every pass, also on a throw. */
export async function backwardPasses<Grad>(passes: ReadonlyArray<KeptPass<Grad>>, dLogp: Float64Array, dEntropy: Float64Array, grad: Grad): Promise<void> {
  try {
    let slot = 0;
    for (const pass of passes) {
      const starts = pass.logprobs.map((row) => ((slot += row.length), slot - row.length));
      const rows = (values: Float64Array) => pass.logprobs.map((row, i) => values.subarray(starts[i], starts[i] + row.length));
      await pass.backward(rows(dLogp), grad, rows(dEntropy));
    }
  } finally {
    disposePasses(passes);
  }
}

export function disposePasses(passes: ReadonlyArray<KeptPass<unknown>> | undefined): void {
  for (const pass of passes ?? []) pass.dispose?.();
}

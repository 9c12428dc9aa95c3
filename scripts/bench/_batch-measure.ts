/**
 * A training step's sampling, two ways, the same in Node and in the browser (the bench page
 * imports this file too): `generateGroups` over the step's items against one `generateGroup`
 * after another. Both produce the same groups (batch.test.ts checks it); only the time differs.
 */
import type { OnnxPolicy } from '../../lib/onnx.js';
import type { GenerateGroupOptions } from '../../lib/core/policy.js';

export interface StepSpec {
  items: number;
  groupSize: number;
  newTokens: number;
  /** Prompt lengths cycle through these, so the batch has to pad. */
  promptTokens: number[];
}

export interface StepTiming {
  mode: 'generateGroups' | 'one group at a time';
  ms: number;
  tokens: number;
  tokensPerSecond: number;
}

export function stepRequests(spec: StepSpec): GenerateGroupOptions[] {
  const text = 'Group Relative Policy Optimization samples a group of completions per prompt and scores them. ';
  return Array.from({ length: spec.items }, (_, i) => {
    const length = spec.promptTokens[i % spec.promptTokens.length];
    const prompt = `${i}: ${text.repeat(Math.ceil(length / text.length))}`.slice(0, length);
    return { prompt, groupSize: spec.groupSize, maxNewTokens: spec.newTokens, seed: 100 + i };
  });
}

/** The fastest of `repeats` runs of each mode, taking turns (a busy neighbour slows both alike). */
export async function measureStep(policy: OnnxPolicy, spec: StepSpec, repeats: number): Promise<StepTiming[]> {
  const requests = stepRequests(spec);
  const modes = {
    generateGroups: () => policy.generateGroups(requests),
    'one group at a time': async () => {
      const groups = [];
      for (const r of requests) groups.push(await policy.generateGroup(r));
      return groups;
    },
  } as const;
  await modes.generateGroups(); // warm-up
  const best: Record<string, StepTiming> = {};
  for (let r = 0; r < repeats; r++) {
    for (const [mode, run] of Object.entries(modes)) {
      const start = performance.now();
      const groups = await run();
      const elapsed = performance.now() - start;
      const tokens = groups.reduce((n, g) => n + g.usage.completionTokens, 0);
      if (!best[mode] || elapsed < best[mode].ms) best[mode] = { mode: mode as StepTiming['mode'], ms: elapsed, tokens, tokensPerSecond: (tokens / elapsed) * 1000 };
    }
  }
  return [best.generateGroups, best['one group at a time']];
}

/**
 * How far the training forward's log-probs are from the ones the tokens were sampled with: mean
 * and max |logp_sample - logp_train| over the batch's completion tokens. Before the first update
 * on a batch both are of the same parameters, so this is what the two passes disagree by (near
 * zero when they run the same kernels); on later iterations it includes the updates since.
 */
import type { GroupRolloutBatch } from '../math/batch.js';
import type { TokenLayout } from './objective.js';

export interface LogprobDrift {
  mean: number;
  max: number;
}

/** `logps` holds the forward's log-probs in `layout`'s slots; the sampled ones are the batch's old log-probs. */
export function logprobDrift(batch: GroupRolloutBatch, layout: TokenLayout, logps: ArrayLike<number>): LogprobDrift {
  const { oldLogProbs, responseMask } = batch.rollout;
  let sum = 0;
  let max = 0;
  let count = 0;
  layout.completions.forEach((tokens, i) => {
    for (let t = 0; t < tokens.length; t++) {
      if (!responseMask[i][t]) continue;
      const d = Math.abs(Number(oldLogProbs[i][t]) - logps[layout.offsets[i] + t]);
      sum += d;
      max = Math.max(max, d);
      count++;
    }
  });
  return { mean: count > 0 ? sum / count : 0, max };
}

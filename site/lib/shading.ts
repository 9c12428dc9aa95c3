/**
 * Per-token log-prob shading: how surprised the model was by each token it sampled. The shade
 * grows with the surprisal (-log p), so a likely token stays pale and the scale still tells 1%
 * from 0.1% (a random model's tokens are all unlikely; a trained one's mostly likely).
 */

/** Surprisal, in nats, that gets the strongest shade (p = e^-7, about 0.1%). */
const FULL = 7;

/** Background of a token with log-probability `logprob` (the model's, at the run's temperature). */
export function tokenShade(logprob: number): string {
  if (!Number.isFinite(logprob)) return 'transparent';
  const alpha = Math.round(Math.min(1, Math.max(0, -logprob) / FULL) * 0.7 * 100) / 100;
  return alpha < 0.02 ? 'transparent' : `rgba(234, 88, 12, ${alpha})`;
}

/** Legend stops: probability and its background. */
export const SHADE_LEGEND: ReadonlyArray<{ label: string; color: string }> = [0.9, 0.5, 0.1, 0.01, 0.001].map((p) => ({
  label: `${+(p * 100).toPrecision(2)}%`,
  color: tokenShade(Math.log(p)),
}));

/** "p = 42.1%, log p = -0.865" for a token's tooltip. */
export function tokenTitle(logprob: number): string {
  return `p = ${(Math.exp(logprob) * 100).toFixed(1)}%, log p = ${logprob.toFixed(3)}`;
}

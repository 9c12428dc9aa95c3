/**
 * What a completion's tokens can be shaded by: the probability the model gave each sampled token
 * (stored with the run), or, once the loaded model scores the group again, its entropy at that
 * token, the importance ratio of the model now to the model that sampled it, and the token's share
 * of the GRPO loss gradient (|d loss / d log p| over the group's sum, from `grpoLoss` with the
 * group's stored advantages). Pure functions; the scoring is the caller's.
 */
import type { RolloutRecord, ScoreResult } from '../../lib/index.js';
import { grpoLoss, type GrpoLossConfig } from '../../lib/math.js';
import type { TokenPiece } from './tokens.js';

export type TokenView = 'probability' | 'entropy' | 'ratio' | 'gradient';

export const TOKEN_VIEWS: ReadonlyArray<{ id: TokenView; label: string; needsScore: boolean }> = [
  { id: 'probability', label: 'probability when sampled', needsScore: false },
  { id: 'entropy', label: 'entropy (model now)', needsScore: true },
  { id: 'ratio', label: 'ratio, model now / when sampled', needsScore: true },
  { id: 'gradient', label: 'share of the loss gradient', needsScore: true },
];

/** Per completion, per token: the values each scored view shades by. */
export interface ScoredViews {
  entropy: number[][];
  ratio: number[][];
  gradient: number[][];
}

/**
 * The scored views of a group from its stored rollouts and a fresh score of the same tokens.
 * The gradient is the policy term's (no KL: the reference model is not at hand here).
 */
export function scoredViews(rollouts: readonly RolloutRecord[], scored: ScoreResult, loss: GrpoLossConfig = {}): ScoredViews {
  const width = Math.max(1, ...rollouts.map((r) => r.tokenIds.length));
  const pad = (row: readonly number[]) => Array.from({ length: width }, (_, t) => row[t] ?? 0);
  const { grad } = grpoLoss(
    {
      logps: scored.logprobs.map(pad),
      oldLogps: rollouts.map((r) => pad(r.logprobs)),
      advantages: rollouts.map((r) => r.advantage),
      mask: rollouts.map((r) => Array.from({ length: width }, (_, t) => (t < r.tokenIds.length ? 1 : 0))),
    },
    { ...loss, beta: 0, entropyCoef: 0 },
  );
  const magnitude = rollouts.map((r, i) => r.tokenIds.map((_, t) => Math.abs(grad[i][t])));
  const total = magnitude.flat().reduce((a, b) => a + b, 0);
  return {
    entropy: rollouts.map((r, i) => r.tokenIds.map((_, t) => scored.entropies[i][t])),
    ratio: rollouts.map((r, i) => r.tokenIds.map((_, t) => Math.exp(scored.logprobs[i][t] - r.logprobs[t]))),
    gradient: magnitude.map((row) => row.map((g) => (total > 0 ? g / total : 0))),
  };
}

/** One value per piece: pieces that join several tokens average an entropy, multiply ratios, add shares. */
export function pieceValues(view: Exclude<TokenView, 'probability'>, pieces: readonly TokenPiece[], values: readonly number[]): number[] {
  let t = 0;
  return pieces.map((piece) => {
    const own = values.slice(t, t + piece.tokens);
    t += piece.tokens;
    if (own.length === 0) return Number.NaN;
    if (view === 'ratio') return own.reduce((a, b) => a * b, 1);
    const sum = own.reduce((a, b) => a + b, 0);
    return view === 'entropy' ? sum / own.length : sum;
  });
}

/** Background of a piece under a scored view, and its legend: each view has its own scale. */
export function viewShade(view: Exclude<TokenView, 'probability'>, value: number): string {
  if (!Number.isFinite(value)) return 'transparent';
  if (view === 'ratio') {
    // log2 of the ratio: blue where the model now likes the token more, orange where less; full at 4x.
    const strength = Math.min(1, Math.abs(Math.log2(value)) / 2);
    const alpha = Math.round(strength * 0.7 * 100) / 100;
    return alpha < 0.02 ? 'transparent' : value > 1 ? `rgba(37, 99, 235, ${alpha})` : `rgba(234, 88, 12, ${alpha})`;
  }
  // Entropy in nats, full at 4; a gradient share, full at 25% of the group's.
  const full = view === 'entropy' ? 4 : 0.25;
  const alpha = Math.round(Math.min(1, Math.max(0, value) / full) * 0.7 * 100) / 100;
  return alpha < 0.02 ? 'transparent' : `rgba(124, 58, 237, ${alpha})`;
}

export const VIEW_LEGEND: Record<Exclude<TokenView, 'probability'>, ReadonlyArray<{ label: string; color: string }>> = {
  entropy: [0.25, 1, 2, 4].map((h) => ({ label: `${h} nats`, color: viewShade('entropy', h) })),
  ratio: [0.25, 0.5, 1, 2, 4].map((r) => ({ label: `${r}×`, color: viewShade('ratio', r) })),
  gradient: [0.01, 0.05, 0.1, 0.25].map((g) => ({ label: `${g * 100}%`, color: viewShade('gradient', g) })),
};

/** A piece's tooltip under a view. */
export function viewTitle(view: Exclude<TokenView, 'probability'>, value: number): string {
  if (!Number.isFinite(value)) return '';
  if (view === 'entropy') return `entropy ${value.toFixed(3)} nats`;
  if (view === 'ratio') return `ratio now / when sampled = ${value.toFixed(3)}`;
  return `${(value * 100).toFixed(2)}% of the group's loss gradient`;
}

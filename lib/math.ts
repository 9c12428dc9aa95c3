/**
 * `webgrpo/math`: the GRPO maths as pure float64 functions with no dependencies, numbers matching
 * TRL's GRPOTrainer: group-relative advantages, per-token log-probs and entropy, the GRPO loss
 * family with its analytic gradient (TRL's loss types, importance sampling, the sampling
 * correction, adaptive entropy), the typed batch layers, statistics and seeded randomness.
 *
 * @module webgrpo/math
 */
export * from './math/index.js';

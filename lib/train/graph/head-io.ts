/** Input and output names of the head adapter's training graphs (lib/train/graph/head-graph.ts), shared with the engine that feeds them. */
export const HEAD_IO = {
  logits: 'logits',
  hidden: 'hidden',
  targets: 'targets',
  a: 'adapter.a',
  b: 'adapter.b',
  invTemperature: 'inv_temperature',
  logps: 'logps',
  entropies: 'entropies',
  refLogps: 'ref_logps',
  dlogps: 'dlogps',
  dentropies: 'dentropies',
  gradA: 'grad.a',
  gradB: 'grad.b',
} as const;
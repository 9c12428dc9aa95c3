/** The setup form: what a new run is started with. */

export interface Setup {
  /** A built-in task name, or `upload`. */
  task: string;
  reward: string;
  method: string;
  items: number;
  groupSize: number;
  epochs: number;
  batchSize: number;
  temperature: number;
  maxNewTokens: number;
  seed: number;
  /** Gradient runs: AdamW's learning rate, the adapter's rank, optimizer updates per step. */
  lr: number;
  rank: number;
  iterations: number;
  /** Router runs: the router's learning rate and the samples a query class needs before its weights are used. */
  routerLr: number;
  minSamples: number;
}

export const INITIAL_SETUP: Setup = {
  task: 'alphabetise',
  reward: 'similarity',
  method: 'exemplars',
  items: 4,
  groupSize: 4,
  epochs: 2,
  batchSize: 2,
  temperature: 0.7,
  maxNewTokens: 48,
  seed: 0,
  lr: 0.02,
  rank: 8,
  iterations: 1,
  routerLr: 0.1,
  minSamples: 5,
};

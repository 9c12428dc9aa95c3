/**
 * A pair of training graphs (builder.ts's `TrainingModels`) open in one onnxruntime: the forward,
 * and the backward that reads some of the forward's outputs (`saved`) and inputs (`shared`) back.
 * The head engine and the full-parameter engine both run their graphs this way.
 */
import type { TrainingModels } from './builder.js';
import type { GraphRuntime, GraphSession, GraphTensor } from './runtime.js';

export interface SessionPair {
  runtime: GraphRuntime;
  forward: GraphSession;
  backward: GraphSession;
  saved: string[];
  shared: string[];
}

export async function openSessionPair(runtime: GraphRuntime, models: Pick<TrainingModels, 'forward' | 'backward' | 'saved' | 'sharedInputs'>, sessionOptions: Record<string, unknown>): Promise<SessionPair> {
  const forward = await runtime.InferenceSession.create(models.forward, sessionOptions);
  const backward = await runtime.InferenceSession.create(models.backward, sessionOptions);
  return { runtime, forward, backward, saved: models.saved, shared: models.sharedInputs };
}

/** What a backward run is fed from its forward run: the saved outputs and the shared inputs, as they were. */
export function backwardFeeds(pair: SessionPair, forward: { feeds: Record<string, GraphTensor>; out: Record<string, GraphTensor> }): Record<string, GraphTensor> {
  const feeds: Record<string, GraphTensor> = {};
  for (const name of pair.saved) feeds[name] = forward.out[name];
  for (const name of pair.shared) feeds[name] = forward.feeds[name];
  return feeds;
}

export function releaseSessionPair(pair: SessionPair): Promise<unknown> {
  return Promise.all([pair.forward.release?.(), pair.backward.release?.()]);
}

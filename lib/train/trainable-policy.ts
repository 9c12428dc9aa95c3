/**
 * What the training engines need of the policy whose model they train (an `OnnxPolicy` from
 * `loadOnnxPolicy` has it all): it samples (`Policy`), encodes prompts as the sampler does, and
 * offers the trainable surface each adapter works through. The head adapter trains through
 * `head` (present when the policy was loaded with `hiddenState: true`); full-depth LoRA reads the
 * model's files (`modelGraph`) and has the sampler follow the adapter as graph inputs
 * (`followAdapter`), or swaps in a merged graph (`replaceGraph`).
 */
import type { Policy, PromptInput } from '../core/policy.js';
import type { FollowedAdapter } from '../policy/onnx/follow-adapter.js';
import type { ModelGraph } from '../policy/onnx/graph.js';
import type { TrainableHead } from '../policy/onnx/head.js';

export interface TrainablePolicy extends Policy {
  /** The token ids a prompt becomes, as sampling and scoring see it. */
  promptIds(input: PromptInput): number[];
  /** The LM head's adapter and the frozen model's per-token states (head training). */
  readonly head?: TrainableHead | undefined;
  /** The base model's graph, external data and config (LoRA training reads its decoder from them). */
  modelGraph(): Promise<ModelGraph>;
  /** Samples with another graph of the same model from now on (a merged adapter, or the base graph again). */
  replaceGraph(graph: Uint8Array): Promise<void>;
  /** Samples and scores under a LoRA adapter's A and B as graph inputs, with no merge. */
  followAdapter?(adapter: FollowedAdapter): Promise<void>;
  /** Frees the sampler's session until the next request builds it again the same way (a LoRA run's `takeTurns`). */
  releaseSession?(): Promise<void>;
}

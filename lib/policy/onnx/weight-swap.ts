/**
 * What an ONNX policy samples with, swapped between requests: the model's own files (read for a
 * LoRA merge or for training), another graph of the same model in place of the decoder's
 * (replaceGraph: merged weights, or the base graph again), or a LoRA adapter's A and B as inputs
 * of a rewritten graph (followAdapter, follow-adapter.ts). The policy drains its batcher and
 * queues these after its other work; the swap itself is here.
 */
import { InvalidInputError, UnsupportedError } from '../../errors.js';
import type { Decoder } from './decoder.js';
import { AdapterInputs, isAdapterInput, type FollowedAdapter } from './follow-adapter.js';
import type { GraphAccess, ModelGraph } from './graph.js';
import type { OrtSession } from './ort-types.js';

export interface SwapParts {
  decoder: Decoder;
  /** The base model's files and sessions of other graphs of it; absent: the weights cannot be replaced. */
  graph?: GraphAccess;
  /** Puts `session` in place of the decoder's and releases the old one. */
  replaceSession?(session: OrtSession): Promise<void>;
}

export class WeightSwap {
  /** Built on the first followAdapter. */
  private adapterInputs: AdapterInputs | undefined;

  constructor(private readonly parts: SwapParts) {}

  modelGraph(): Promise<ModelGraph> {
    if (!this.parts.graph) return Promise.reject(new UnsupportedError('This policy cannot read its model files.'));
    return this.parts.graph.read();
  }

  /** Throws unless the policy's weights can be replaced; checked before the policy waits for its batch. */
  checkReplaceable(): void {
    if (!this.parts.graph || !this.parts.replaceSession) throw new UnsupportedError('This policy cannot replace its weights.');
  }

  /** The decoder runs `graph` from now on; a graph whose inputs or outputs differ is refused and the old weights stay. */
  async replaceGraph(graph: Uint8Array): Promise<void> {
    const { graph: access, replaceSession, decoder } = this.required();
    const session = await access.build(graph);
    // A followed adapter's inputs are not the model's: a merged or base graph has none.
    const names = (s: OrtSession) => JSON.stringify([[...s.inputNames].filter((n) => !isAdapterInput(n)).sort(), [...s.outputNames].sort()]);
    if (names(session) !== names(decoder.current)) {
      await (session as OrtSession & { release(): Promise<void> }).release();
      throw new InvalidInputError('graph', "has other inputs or outputs than the policy's model; pass a graph of the same model with other weights.");
    }
    await replaceSession(session);
    this.adapterInputs?.forget();
  }

  /** The decoder runs under the adapter's A and B as graph inputs (a rewritten graph, built on the first call). */
  async followAdapter(adapter: FollowedAdapter): Promise<void> {
    const { graph: access, replaceSession, decoder } = this.required();
    this.adapterInputs ??= new AdapterInputs(access, replaceSession, decoder);
    await this.adapterInputs.follow(adapter);
  }

  private required(): Required<SwapParts> {
    this.checkReplaceable();
    return this.parts as Required<SwapParts>;
  }
}

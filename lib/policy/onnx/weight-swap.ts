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
  /** Releases the decoder's session; the next replaceSession puts one in its place. */
  releaseSession?(): Promise<void>;
}

export class WeightSwap {
  /** Built on the first followAdapter. */
  private adapterInputs: AdapterInputs | undefined;
  /** The decoder's session was released (releaseSession); the next pass builds it again. */
  private released = false;
  /** A graph given to replaceGraph runs now: its bytes are the caller's, not kept, so its session cannot be built again. */
  private replaced = false;

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
    this.released = false;
    this.replaced = true;
    this.adapterInputs?.forget();
  }

  /** Whether the decoder's session is released (releaseSession) and waits to be built again. */
  get sessionReleased(): boolean {
    return this.released;
  }

  /**
   * Frees the decoder's session (its weights, their prepacked copies); `ready()` builds it again
   * the way it was built: the followed adapter's rewritten graph, or the base graph.
   */
  async releaseSession(): Promise<void> {
    const { releaseSession } = this.required();
    if (this.released) return;
    if (!releaseSession) throw new UnsupportedError('This policy cannot release its session.');
    if (this.replaced) throw new UnsupportedError('The policy samples with a graph given to replaceGraph, whose bytes it does not keep, so it cannot build that session again; follow an adapter (followAdapter) or replace the graph with the base one first.');
    await releaseSession();
    this.released = true;
  }

  /** Builds the decoder's session again when it was released; a pass runs only after this. */
  async ready(): Promise<void> {
    if (!this.released) return;
    const { graph: access, replaceSession } = this.required();
    const session = await (this.adapterInputs?.rebuild() ?? this.baseSession(access));
    await replaceSession(session);
    this.released = false;
  }

  /** The decoder runs under the adapter's A and B as graph inputs (a rewritten graph, built on the first call). */
  async followAdapter(adapter: FollowedAdapter): Promise<void> {
    const { graph: access, replaceSession, decoder } = this.required();
    this.adapterInputs ??= new AdapterInputs(access, replaceSession, decoder);
    // A new rank or modules built a session: a released one is in place again.
    if (await this.adapterInputs.follow(adapter)) this.released = false;
    this.replaced = false;
  }

  /** The base graph's session, from the files on disk where the host can (follow-adapter.ts says why). */
  private async baseSession(access: GraphAccess): Promise<OrtSession> {
    return (await access.buildReferencing?.()) ?? access.build((await access.read()).graph);
  }

  private required(): Required<Omit<SwapParts, 'releaseSession'>> & Pick<SwapParts, 'releaseSession'> {
    this.checkReplaceable();
    return this.parts as Required<Omit<SwapParts, 'releaseSession'>> & Pick<SwapParts, 'releaseSession'>;
  }
}

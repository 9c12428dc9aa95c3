/**
 * A policy sampling under a LoRA adapter that is being trained: the first call rewrites the
 * model's graph so every adapted projection takes its A and B as inputs (lora-inputs.ts) and
 * swaps that session in; every later call only hands the decoder the new arrays. No merge of the
 * weights and no new session per update, whatever the size of the model.
 */
import { InvalidInputError } from '../../errors.js';
import { collectGarbage } from './collect-garbage.js';
import type { Decoder } from './decoder.js';
import type { GraphAccess } from './graph.js';
import type { OrtSession } from './ort-types.js';
import { PROJECTIONS, type ProjectionName } from './structure/decoder.js';
import { findDecoder } from './structure/find-decoder.js';
import { addLoraInputs, loraInputName } from './structure/lora-inputs.js';

/** A LoRA adapter as lib/lora lays it out (PEFT's layouts: A [r, in], B [out, r]). */
export interface FollowedAdapter {
  config: { r: number };
  scale: number;
  layers: ReadonlyArray<Partial<Record<ProjectionName, { inDim: number; outDim: number; A: Float32Array; B: Float32Array }>>>;
}

/** What the followed adapter's graph is rewritten for: its rank, scale, depth and modules. */
interface RewriteSpec {
  r: number;
  scale: number;
  layers: number;
  modules: ProjectionName[];
}

export class AdapterInputs {
  /** The rank, scale and modules the current session's graph was rewritten for. */
  private built: RewriteSpec | undefined;
  /** The graph rewritten for `spec`, its weights references to the model's files, where the session was built from disk. */
  private rewritten: { spec: RewriteSpec; graph: Uint8Array } | undefined;

  constructor(
    private readonly access: GraphAccess,
    private readonly replaceSession: (session: OrtSession) => Promise<void>,
    private readonly decoder: Decoder,
  ) {}

  /** Returns whether it built and swapped in a new session (a first call, or another rank, scale or modules). */
  async follow(adapter: FollowedAdapter): Promise<boolean> {
    const modules = PROJECTIONS.filter((m) => adapter.layers[0]?.[m] !== undefined);
    if (modules.length === 0) throw new InvalidInputError('adapter', 'adapts no projection.');
    adapter.layers.forEach((layer, l) => {
      for (const m of PROJECTIONS) if ((layer[m] !== undefined) !== modules.includes(m)) throw new InvalidInputError('adapter', `layer ${l} adapts other projections than layer 0; every layer must adapt the same ones.`);
    });
    const spec: RewriteSpec = { r: adapter.config.r, scale: adapter.scale, layers: adapter.layers.length, modules };
    const rebuilt = JSON.stringify(spec) !== JSON.stringify(this.built);
    if (rebuilt) {
      await this.replaceSession(await this.session(spec));
      this.built = spec;
    }
    const inputs: Record<string, { data: Float32Array; dims: number[] }> = {};
    adapter.layers.forEach((layer, l) => {
      for (const m of modules) {
        const pair = layer[m]!;
        inputs[loraInputName(l, m, 'A')] = { data: pair.A, dims: [adapter.config.r, pair.inDim] };
        inputs[loraInputName(l, m, 'B')] = { data: pair.B, dims: [pair.outDim, adapter.config.r] };
      }
    });
    this.decoder.setExtraInputs(inputs);
    return rebuilt;
  }

  /** A new session of the graph the adapter is followed with, rewritten as before (the policy's releaseSession builds it again so); undefined when none is followed. */
  rebuild(): Promise<OrtSession> | undefined {
    return this.built ? this.session(this.built) : undefined;
  }

  private async session(spec: RewriteSpec): Promise<OrtSession> {
    // Built again the same way (releaseSession), the rewritten graph is kept, not the weights:
    // from the files on disk (Node) it needs none of them read.
    if (this.rewritten?.spec === spec) {
      const again = await this.access.buildReferencing?.(this.rewritten.graph);
      if (again) return again;
    }
    const rewritten = await this.rewrite(spec);
    // Where the runtime can read the weights from disk, its session is not built beside a
    // second copy of them handed over from JavaScript (538 MB at SmolLM2-135M fp32), nor beside
    // the arrays the rewrite read, collected first where the runtime can be asked (Node): at that
    // shape they kept a LoRA run's peak as it opened 300-400 MB above its later iterations'.
    if (this.access.buildReferencing) await collectGarbage();
    const fromDisk = await this.access.buildReferencing?.(rewritten);
    this.rewritten = fromDisk ? { spec, graph: rewritten } : undefined;
    return fromDisk ?? this.access.build(rewritten);
  }

  /** The model's graph with the adapter's inputs; the weights read to find the projections are garbage once it returns. */
  private async rewrite(spec: RewriteSpec): Promise<Uint8Array> {
    const { graph, externalData, config } = await this.access.read();
    // Only where the projections sit is needed: fp16 weights are not widened for it.
    const decoder = findDecoder(graph, { config, externalData, keepHalf: true });
    if (decoder.layers.length !== spec.layers) throw new InvalidInputError('adapter', `has ${spec.layers} layers; the model has ${decoder.layers.length}.`);
    return addLoraInputs(graph, decoder, { r: spec.r, scale: spec.scale, targetModules: spec.modules });
  }

  /** The policy's graph was replaced by one without adapter inputs. */
  forget(): void {
    this.built = undefined;
    this.rewritten = undefined;
    this.decoder.setExtraInputs({});
  }
}

/** Whether an input is one of an adapter's (the rest are the decoder's own). */
export function isAdapterInput(name: string): boolean {
  return name.startsWith('lora.');
}

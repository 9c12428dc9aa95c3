/**
 * onnxruntime-web's sessions made from a model's inline weights as external data, viewed in the
 * model's own bytes. Given a model as bytes, onnxruntime-web copies them into its WebAssembly heap
 * and parses them there, so the heap holds the file, its parsed copy and the weights made from it
 * at once; a WebAssembly heap never shrinks, and what a later session or the LoRA engine needs
 * reuses that room or grows it further. Given the graph without its large inline weights
 * (inline-data.ts) and each weight as mounted external data, it copies each weight once, into the
 * tensor it makes. Measured at Qwen2.5-0.5B's shape in q4 (a 769 MB file, BENCHMARKS scale-tab):
 * the heap after the session is made, 3185 MB from the bytes, 2200 MB this way. The views are of
 * the bytes the caller passed (transformers.js' download): nothing is copied in JavaScript.
 */
import { readExternalPieces } from './external-data.js';
import { inlineAsExternal } from './inline-data.js';
import { streamedExternalData } from './streamed-model.js';

interface SessionFactory {
  create(model: unknown, options?: Record<string, unknown>): Promise<unknown>;
}

/** The name the graph's references give its own bytes (never a file: every piece is mounted). */
const SELF = 'webgrpo-inline-weights';

/** The graph of `model` without its large inline weights, and those weights as external data: views of `model`'s bytes. */
export async function asExternalViews(model: Uint8Array): Promise<{ graph: Uint8Array; externalData: Array<{ path: string; data: Uint8Array }> }> {
  const view = (offset: number, length: number) => model.subarray(offset, Math.min(model.length, offset + length));
  const graph = await inlineAsExternal(async (offset, length) => view(offset, length), SELF, model.length);
  const pieces = await readExternalPieces(graph, async (_file, ranges) => ranges.map(({ offset, length }) => view(offset, length)));
  return { graph: pieces.graph, externalData: Object.entries(pieces.externalData).map(([path, data]) => ({ path, data })) };
}

let depth = 0;
let original: SessionFactory['create'] | undefined;

/**
 * Runs `fn` (transformers.js making a model's sessions) with `sessions.create` making every session
 * given as bytes with no external data of its own from its weights' views instead (a graph whose
 * weights were streamed while the model loads, streamed-model.ts, from those pieces). The model's
 * graph and weights are the same, so the session is too. Calls may nest or overlap: the factory is
 * restored when the last one ends.
 */
export async function withSessionsFromViews<T>(sessions: SessionFactory, fn: () => Promise<T>): Promise<T> {
  if (depth++ === 0) {
    const create = sessions.create;
    original = create;
    sessions.create = async function (this: unknown, model: unknown, options?: Record<string, unknown>) {
      if (!(model instanceof Uint8Array) || (Array.isArray(options?.externalData) && options.externalData.length > 0)) return create.call(this, model, options);
      // The graph of a file streamed while the model loads (streamed-model.ts): its weights are the streamed pieces.
      const streamed = streamedExternalData(model);
      if (streamed) return create.call(this, model, { ...options, externalData: streamed });
      // Bytes that are not an ONNX protobuf this reader walks (an ORT-format model) go as they are.
      const views = await asExternalViews(model).catch(() => undefined);
      if (!views || views.externalData.length === 0) return create.call(this, model, options);
      return create.call(this, views.graph, { ...options, externalData: views.externalData });
    };
  }
  try {
    return await fn();
  } finally {
    if (--depth === 0) {
      sessions.create = original!;
      original = undefined;
    }
  }
}

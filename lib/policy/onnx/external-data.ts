/**
 * A graph's external data read tensor by tensor. Exports past 2 GB keep their weights in a data
 * file beside the graph (`model.onnx_data`); reading that file whole needs one buffer as large as
 * the model (Node's readFile refuses files over 2 GiB, a page's arrayBuffer() may fail long before),
 * and reads bytes no tensor refers to. Here the graph's own references say which byte ranges to
 * read; each range becomes its own array, read from a stream or at its position, and the graph's
 * references are renamed to those arrays (`model.onnx_data@1024`), so every reader of initializers
 * (and onnxruntime's `externalData` option) finds them as it finds whole files.
 */
import onnxProto from 'onnx-proto';
import { ModelLoadError } from '../../errors.js';

const EXTERNAL = 1;

/** A byte range of a file: [offset, offset + length). */
export interface ByteRange {
  offset: number;
  length: number;
}

/** Reads the ranges of one file (sorted by offset, not overlapping), each into an array of its own. */
export type ReadRanges = (file: string, ranges: ByteRange[]) => Promise<Uint8Array[]>;

export interface ExternalPieces {
  /** The graph, its external references renamed to the pieces (the graph as read when it has none). */
  graph: Uint8Array;
  /** Each external tensor's bytes, by the location its reference now names. */
  externalData: Record<string, Uint8Array>;
}

/**
 * The external tensors of `graph`, each read on its own. `read` gets file names relative to the
 * graph's folder, as the references give them.
 */
export async function readExternalPieces(graph: Uint8Array, read: ReadRanges): Promise<ExternalPieces> {
  let model: onnxProto.onnx.ModelProto;
  try {
    model = onnxProto.onnx.ModelProto.decode(graph);
  } catch (cause) {
    throw new ModelLoadError(`The ONNX file could not be decoded: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
  const tensors = (model.graph?.initializer ?? []).filter((t) => t.dataLocation === EXTERNAL);
  if (tensors.length === 0) return { graph, externalData: {} };
  const byFile = new Map<string, Array<{ tensor: onnxProto.onnx.ITensorProto; range: ByteRange; entries: Map<string, string> }>>();
  for (const tensor of tensors) {
    const entries = new Map(tensor.externalData!.map((e) => [String(e.key), String(e.value)]));
    const location = entries.get('location');
    const offset = Number(entries.get('offset') ?? 0);
    const length = Number(entries.get('length'));
    if (!location || location.startsWith('/') || location.split(/[\\/]/).includes('..')) {
      throw new ModelLoadError(`Initializer ${tensor.name}: external data location "${location ?? ''}" is not a file beside the graph.`);
    }
    if (!(Number.isSafeInteger(offset) && offset >= 0 && Number.isSafeInteger(length) && length > 0)) {
      throw new ModelLoadError(`Initializer ${tensor.name}: external data needs a non-negative offset and a positive length (got offset ${entries.get('offset')}, length ${entries.get('length')}).`);
    }
    byFile.set(location, [...(byFile.get(location) ?? []), { tensor, range: { offset, length }, entries }]);
  }
  const externalData: Record<string, Uint8Array> = {};
  for (const [file, items] of byFile) {
    items.sort((a, b) => a.range.offset - b.range.offset);
    items.forEach((item, i) => {
      const previous = items[i - 1];
      if (previous && previous.range.offset + previous.range.length > item.range.offset) throw new ModelLoadError(`${file}: the data of ${previous.tensor.name} and ${item.tensor.name} overlap.`);
    });
    const pieces = await read(file, items.map((item) => item.range));
    items.forEach((item, i) => {
      if (pieces[i].length !== item.range.length) throw new ModelLoadError(`${file} ends before the data of ${item.tensor.name} (bytes ${item.range.offset}..${item.range.offset + item.range.length}).`);
      const name = `${file}@${item.range.offset}`;
      externalData[name] = pieces[i];
      item.entries.set('location', name);
      item.entries.set('offset', '0');
      item.tensor.externalData = [...item.entries].map(([key, value]) => ({ key, value }));
    });
  }
  return { graph: onnxProto.onnx.ModelProto.encode(model).finish(), externalData };
}

/**
 * The ranges of a byte stream (a file's or a response's body) copied out as the chunks pass: the
 * stream is read once, front to back, and no more of it is held than the ranges.
 */
export async function rangesOfStream(stream: AsyncIterable<Uint8Array>, ranges: ByteRange[]): Promise<Uint8Array[]> {
  const out = ranges.map((r) => new Uint8Array(r.length));
  const filled = ranges.map(() => 0);
  let at = 0;
  let next = 0;
  for await (const chunk of stream) {
    const end = at + chunk.length;
    for (let i = next; i < ranges.length && ranges[i].offset < end; i++) {
      const from = Math.max(ranges[i].offset, at);
      const to = Math.min(ranges[i].offset + ranges[i].length, end);
      if (to > from) {
        out[i].set(chunk.subarray(from - at, to - at), from - ranges[i].offset);
        filled[i] += to - from;
      }
    }
    while (next < ranges.length && ranges[next].offset + ranges[next].length <= end) next++;
    at = end;
    if (next === ranges.length) break;
  }
  // A stream that ended early leaves its ranges short, which the caller reports by name.
  return out.map((piece, i) => (filled[i] === piece.length ? piece : piece.subarray(0, filled[i])));
}

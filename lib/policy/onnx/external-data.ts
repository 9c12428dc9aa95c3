/**
 * A graph's external data read tensor by tensor. Exports past 2 GB keep their weights in a data
 * file beside the graph (`model.onnx_data`); reading that file whole needs one buffer as large as
 * the model (Node's readFile refuses files over 2 GiB, a page's arrayBuffer() may fail long before),
 * and reads bytes no tensor refers to. Here the graph's own references say which byte ranges to
 * read; each range becomes its own array, read from a stream or at its position, and the graph's
 * references are renamed to those arrays (`model.onnx_data@1024`), so every reader of initializers
 * (and onnxruntime's `externalData` option) finds them as it finds whole files.
 */
import { ModelLoadError } from '../../errors.js';
import { concat, fieldHeader, fields, findField, LENGTH_DELIMITED } from './protobuf.js';

const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const TENSOR_NAME = 8;
const TENSOR_EXTERNAL_DATA = 13;
const TENSOR_DATA_LOCATION = 14;
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

/** An initializer whose data is external: where its field sits in the graph, and its reference. */
interface ExternalTensor {
  /** The initializer field's tag start and end in the model's bytes. */
  tagStart: number;
  end: number;
  body: Uint8Array;
  name: string;
  entries: Map<string, string>;
  location: string;
  range: ByteRange;
}

/**
 * The external tensors of `graph`, each read on its own. `read` gets file names relative to the
 * graph's folder, as the references give them. Only those initializers' external_data entries
 * are rewritten; every other byte of the model is copied as it is (no decode and re-encode that
 * could drop fields the schema here does not know).
 */
export async function readExternalPieces(graph: Uint8Array, read: ReadRanges): Promise<ExternalPieces> {
  const { graphField, tensors } = externalTensors(graph);
  if (tensors.length === 0) return { graph, externalData: {} };

  const byFile = new Map<string, ExternalTensor[]>();
  for (const t of tensors) byFile.set(t.location, [...(byFile.get(t.location) ?? []), t]);
  const externalData: Record<string, Uint8Array> = {};
  const renamed = new Map<ExternalTensor, string>();
  for (const [file, items] of byFile) {
    const sorted = [...items].sort((a, b) => a.range.offset - b.range.offset);
    sorted.forEach((item, i) => {
      const previous = sorted[i - 1];
      if (previous && previous.range.offset + previous.range.length > item.range.offset) throw new ModelLoadError(`${file}: the data of ${previous.name} and ${item.name} overlap.`);
    });
    const pieces = await read(file, sorted.map((item) => item.range));
    sorted.forEach((item, i) => {
      if (pieces[i].length !== item.range.length) throw new ModelLoadError(`${file} ends before the data of ${item.name} (bytes ${item.range.offset}..${item.range.offset + item.range.length}).`);
      const name = pieceName(file, item.range.offset);
      externalData[name] = pieces[i];
      renamed.set(item, name);
    });
  }
  return { graph: withEntries(graph, graphField, tensors, (t) => new Map(t.entries).set('location', renamed.get(t)!).set('offset', '0')), externalData };
}

/** The files `graph`'s external references name, each once (none for a graph whose data is all inline). */
export function externalLocations(graph: Uint8Array): string[] {
  return [...new Set(externalTensors(graph).tensors.map((t) => t.location))];
}

/** The name readExternalPieces gives the piece of `file` at `offset`. */
function pieceName(file: string, offset: number): string {
  return `${file}@${offset}`;
}

/**
 * The inverse of readExternalPieces' renaming: every reference to a piece
 * (`model.onnx_data@1024`, offset 0) names its file and its position in it again, so a runtime
 * given the graph's path (beside the model's files) reads each weight from the file itself.
 * References that name no piece are kept as they are.
 */
export function piecesAsFiles(graph: Uint8Array): Uint8Array {
  const { graphField, tensors } = externalTensors(graph);
  return withEntries(graph, graphField, tensors, (t) => {
    const at = /^(.*)@(\d+)$/.exec(t.location);
    if (!at || t.range.offset !== 0) return t.entries;
    return new Map(t.entries).set('location', at[1]).set('offset', at[2]);
  });
}

function externalTensors(graph: Uint8Array): { graphField: NonNullable<ReturnType<typeof findField>>; tensors: ExternalTensor[] } {
  const graphField = findField(graph, 0, graph.length, MODEL_GRAPH);
  if (!graphField) throw new ModelLoadError('The ONNX file has no graph.');
  const tensors: ExternalTensor[] = [];
  for (const field of fields(graph, graphField.start, graphField.end)) {
    if (field.number !== GRAPH_INITIALIZER || field.wireType !== LENGTH_DELIMITED) continue;
    const body = graph.subarray(field.start, field.end);
    const tensor = externalReference(body);
    if (tensor) tensors.push({ ...tensor, tagStart: field.tagStart, end: field.end, body });
  }
  return { graphField, tensors };
}

/** `graph` with each of `tensors`' external_data entries replaced by `entriesOf(tensor)`; every other byte copied as it is. */
function withEntries(graph: Uint8Array, graphField: NonNullable<ReturnType<typeof findField>>, tensors: ExternalTensor[], entriesOf: (t: ExternalTensor) => Map<string, string>): Uint8Array {
  if (tensors.length === 0) return graph;
  const parts: Uint8Array[] = [];
  let copiedFrom = graphField.start;
  for (const t of tensors) {
    const body = concat([withoutField(t.body, TENSOR_EXTERNAL_DATA), ...[...entriesOf(t)].map(([key, value]) => entryField(key, value))]);
    parts.push(graph.subarray(copiedFrom, t.tagStart), fieldHeader(GRAPH_INITIALIZER, body.length), body);
    copiedFrom = t.end;
  }
  parts.push(graph.subarray(copiedFrom, graphField.end));
  const body = concat(parts);
  return concat([graph.subarray(0, graphField.tagStart), fieldHeader(MODEL_GRAPH, body.length), body, graph.subarray(graphField.end)]);
}

/** An initializer's external reference, checked, when its data location is external. */
function externalReference(body: Uint8Array): Omit<ExternalTensor, 'tagStart' | 'end' | 'body'> | undefined {
  let name = '';
  let external = false;
  const entries = new Map<string, string>();
  for (const f of fields(body, 0, body.length)) {
    if (f.number === TENSOR_NAME && f.wireType === LENGTH_DELIMITED) name = text(body, f.start, f.end);
    else if (f.number === TENSOR_DATA_LOCATION && f.wireType === 0) external = f.value === EXTERNAL;
    else if (f.number === TENSOR_EXTERNAL_DATA && f.wireType === LENGTH_DELIMITED) {
      let key = '';
      let value = '';
      for (const e of fields(body, f.start, f.end)) {
        if (e.wireType !== LENGTH_DELIMITED) continue;
        if (e.number === 1) key = text(body, e.start, e.end);
        else if (e.number === 2) value = text(body, e.start, e.end);
      }
      entries.set(key, value);
    }
  }
  if (!external) return undefined;
  const location = entries.get('location');
  const offset = Number(entries.get('offset') ?? 0);
  const length = Number(entries.get('length'));
  if (!location || location.startsWith('/') || location.split(/[\\/]/).includes('..')) {
    throw new ModelLoadError(`Initializer ${name}: external data location "${location ?? ''}" is not a file beside the graph.`);
  }
  if (!(Number.isSafeInteger(offset) && offset >= 0 && Number.isSafeInteger(length) && length > 0)) {
    throw new ModelLoadError(`Initializer ${name}: external data needs a non-negative offset and a positive length (got offset ${entries.get('offset')}, length ${entries.get('length')}).`);
  }
  return { name, entries, location, range: { offset, length } };
}

/** A message's bytes without the fields numbered `number`. */
function withoutField(body: Uint8Array, number: number): Uint8Array {
  const kept: Uint8Array[] = [];
  for (const f of fields(body, 0, body.length)) if (f.number !== number) kept.push(body.subarray(f.tagStart, f.end));
  return concat(kept);
}

/** One StringStringEntryProto as an external_data field. */
export function entryField(key: string, value: string): Uint8Array {
  const encoder = new TextEncoder();
  const [k, v] = [encoder.encode(key), encoder.encode(value)];
  const entry = concat([fieldHeader(1, k.length), k, fieldHeader(2, v.length), v]);
  return concat([fieldHeader(TENSOR_EXTERNAL_DATA, entry.length), entry]);
}

function text(bytes: Uint8Array, start: number, end: number): string {
  return new TextDecoder().decode(bytes.subarray(start, end));
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

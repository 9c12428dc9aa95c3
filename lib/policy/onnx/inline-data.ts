/**
 * A graph file's inline weights turned into external references to the file itself, read by
 * position without holding the file. A model under 2 GB usually keeps every weight inline
 * (`raw_data` inside the protobuf); reading it whole puts the file's bytes beside the weights read
 * out of them, and a garbage collector need not return that buffer soon (the engine's first
 * steps ran with both). Here only the graph's structure is read whole; each large `raw_data`
 * becomes `location = <the file>, offset, length`, which readExternalPieces then reads into an
 * array of its own, as it reads a hub export's `model.onnx_data`.
 */
import { ModelLoadError } from '../../errors.js';
import { entryField } from './external-data.js';
import { concat, fieldHeader, LENGTH_DELIMITED, varint } from './protobuf.js';

const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const TENSOR_RAW_DATA = 9;
const TENSOR_DATA_LOCATION = 14;
const EXTERNAL = 1;

/** Inline data below this stays inline: norms and biases are not worth a read of their own. */
export const MIN_EXTERNAL_BYTES = 1 << 16;
/**
 * How much of the file one read brings in while walking its fields. The walk jumps over every
 * moved `raw_data`, so each of those jumps costs a window: at 1 MiB, reading SmolLM2-135M's
 * structure (290 KB) read 211 MB of the file into fresh arrays, again at every turn a LoRA run
 * takes (`takeTurns`). A window no larger than the smallest field moved out reads little more
 * than the structure.
 */
const WINDOW = MIN_EXTERNAL_BYTES;

/** Reads `length` bytes at `offset` of the graph file (fewer at its end). */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>;

/**
 * Positional reads of a file that can only be read once from its start (a fetched body): each read
 * starts at or after the previous one's start, as inlineAsExternal walks the file's fields in
 * order. Only the chunks a read still needs are kept (copied: a chunk may be the stream's own
 * buffer, filled again with the next); the bytes of the large `raw_data` it skips pass by
 * without being gathered, so the file is never held whole.
 */
export function forwardReadAt(chunks: AsyncIterator<Uint8Array>): ReadAt {
  return new ForwardReader(chunks).readAt;
}

/**
 * forwardReadAt's reads, and ranges kept as they pass (`keep`): each copied into an array of its
 * own, so one pass over a stream gives both the graph's structure and its weights.
 */
export class ForwardReader {
  /** Chunks not yet passed, the first starting at `#start`. */
  #held: Uint8Array[] = [];
  #start = 0;
  #end = 0;
  #done = false;
  /** Kept ranges not yet filled. */
  #keeping: Array<{ offset: number; out: Uint8Array; filled: number }> = [];
  /** The chunk #pull read last. */
  #last: Uint8Array | undefined;

  constructor(private readonly chunks: AsyncIterator<Uint8Array>) {}

  readonly readAt: ReadAt = async (offset, length) => {
    if (offset < this.#start) throw new ModelLoadError(`The model file was read out of order (byte ${offset} after ${this.#start}).`);
    while (this.#end < offset + length && (await this.#pull())) {
      const chunk = this.#last!;
      if (this.#end + chunk.length <= offset) {
        // Wholly before the read: dropped as it passes.
        this.#held = [];
        this.#end += chunk.length;
        this.#start = this.#end;
      } else {
        // A copy: the stream may fill the same buffer with its next chunk.
        this.#held.push(chunk.slice());
        this.#end += chunk.length;
      }
    }
    let passed = 0;
    while (passed < this.#held.length && this.#start + this.#held[passed].length <= offset) this.#start += this.#held[passed++].length;
    if (passed > 0) this.#held = this.#held.slice(passed);
    const out = new Uint8Array(Math.max(0, Math.min(offset + length, this.#end) - offset));
    this.#copy(this.#held, this.#start, out, offset);
    return out;
  };

  /** The next chunk into `#last`, copied into the ranges being kept; false at the stream's end. */
  async #pull(): Promise<boolean> {
    if (this.#done) return false;
    const next = await this.chunks.next();
    if (next.done) {
      this.#done = true;
      return false;
    }
    this.#last = next.value;
    for (const k of this.#keeping) k.filled += this.#copy([next.value], this.#end, k.out, k.offset);
    this.#keeping = this.#keeping.filter((k) => k.filled < k.out.length);
    return true;
  }

  /**
   * The bytes [offset, offset + length) in an array of their own, filled as the stream passes
   * them (`offset` at or after the last read's start; what was read already is copied now). Full
   * once rest() has settled, short if the stream ended first.
   */
  keep(offset: number, length: number): Uint8Array {
    if (offset < this.#start) throw new ModelLoadError(`The model file was read out of order (byte ${offset} after ${this.#start}).`);
    const kept = { offset, out: new Uint8Array(length), filled: 0 };
    kept.filled = this.#copy(this.#held, this.#start, kept.out, offset);
    if (kept.filled < length) this.#keeping.push(kept);
    return kept.out;
  }

  /** Reads on until every kept range is filled or the stream ends. */
  async rest(): Promise<void> {
    // Past the reads: nothing more is held for them.
    this.#held = [];
    this.#start = this.#end;
    while (this.#keeping.length > 0 && (await this.#pull())) this.#start = this.#end += this.#last!.length;
  }

  /** Copies the overlap of `chunks` (contiguous, the first at `at`) with `out` (at `offset`); returns the bytes copied. */
  #copy(chunks: Uint8Array[], at: number, out: Uint8Array, offset: number): number {
    let copied = 0;
    for (const chunk of chunks) {
      const from = Math.max(offset, at);
      const to = Math.min(offset + out.length, at + chunk.length);
      if (to > from) {
        out.set(chunk.subarray(from - at, to - at), from - offset);
        copied += to - from;
      }
      at += chunk.length;
    }
    return copied;
  }
}

/**
 * The model in `file` (its name as references beside it give it, e.g. `model.onnx`, `size` bytes
 * long) with every inline `raw_data` of at least `minBytes` moved out to a reference into `file`
 * itself. Every other byte is copied as it is. `onMoved` hears of each range moved out when its
 * field is reached, before the walk reads past it (what ForwardReader.keep needs).
 */
export async function inlineAsExternal(readAt: ReadAt, file: string, size: number, minBytes = MIN_EXTERNAL_BYTES, onMoved?: (offset: number, length: number) => void): Promise<Uint8Array> {
  const reader = new WindowReader(readAt, size);
  const top: Uint8Array[] = [];
  let sawGraph = false;
  for (let pos = 0; pos < size; ) {
    const field = await reader.field(pos);
    if (field.number === MODEL_GRAPH && field.wireType === LENGTH_DELIMITED) {
      sawGraph = true;
      const body = await graphBody(reader, field.start, field.end, file, minBytes, onMoved);
      top.push(fieldHeader(MODEL_GRAPH, body.length), body);
    } else top.push(await reader.bytes(pos, field.end - pos));
    pos = field.end;
  }
  if (!sawGraph) throw new ModelLoadError(`${file} has no graph.`);
  return concat(top);
}

async function graphBody(reader: WindowReader, start: number, end: number, file: string, minBytes: number, onMoved: ((offset: number, length: number) => void) | undefined): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (let pos = start; pos < end; ) {
    const field = await reader.field(pos);
    if (field.number === GRAPH_INITIALIZER && field.wireType === LENGTH_DELIMITED && field.end - field.start >= minBytes) {
      const body = await tensorBody(reader, field.start, field.end, file, minBytes, onMoved);
      parts.push(fieldHeader(GRAPH_INITIALIZER, body.length), body);
    } else parts.push(await reader.bytes(pos, field.end - pos));
    pos = field.end;
  }
  return concat(parts);
}

/** A TensorProto's fields, its large raw_data replaced by external_data entries naming its bytes in `file`. */
async function tensorBody(reader: WindowReader, start: number, end: number, file: string, minBytes: number, onMoved: ((offset: number, length: number) => void) | undefined): Promise<Uint8Array> {
  const kept: Array<{ number: number; bytes: Uint8Array }> = [];
  let raw: { offset: number; length: number } | undefined;
  for (let pos = start; pos < end; ) {
    const field = await reader.field(pos);
    if (field.number === TENSOR_RAW_DATA && field.wireType === LENGTH_DELIMITED && field.end - field.start >= minBytes) {
      raw = { offset: field.start, length: field.end - field.start };
      onMoved?.(raw.offset, raw.length);
    } else kept.push({ number: field.number, bytes: await reader.bytes(pos, field.end - pos) });
    pos = field.end;
  }
  if (!raw) return concat(kept.map((f) => f.bytes));
  // A stated data location (DEFAULT) gives way to the external one.
  const fieldsKept = kept.filter((f) => f.number !== TENSOR_DATA_LOCATION).map((f) => f.bytes);
  const location = [entryField('location', file), entryField('offset', String(raw.offset)), entryField('length', String(raw.length))];
  return concat([...fieldsKept, ...location, Uint8Array.from([TENSOR_DATA_LOCATION * 8, EXTERNAL])]);
}

interface WalkedField {
  number: number;
  wireType: number;
  /** Payload range (length-delimited), or where the value ends. */
  start: number;
  end: number;
}

/** Positional reads through a window of the file, so walking small fields costs one read per window. */
class WindowReader {
  #at = 0;
  #window: Uint8Array = new Uint8Array(0);

  constructor(
    private readonly readAt: ReadAt,
    private readonly size: number,
  ) {}

  async bytes(offset: number, length: number): Promise<Uint8Array> {
    if (offset + length > this.size) throw new ModelLoadError('The ONNX file is truncated.');
    if (offset < this.#at || offset + length > this.#at + this.#window.length) {
      this.#at = offset;
      this.#window = await this.readAt(offset, Math.min(Math.max(WINDOW, length), this.size - offset));
      if (this.#window.length < length) throw new ModelLoadError('The ONNX file is truncated.');
    }
    return this.#window.slice(offset - this.#at, offset - this.#at + length);
  }

  async field(pos: number): Promise<WalkedField> {
    const head = await this.bytes(pos, Math.min(20, this.size - pos));
    const [tag, afterTag] = varint(head, 0);
    const number = Math.floor(tag / 8);
    const wireType = tag & 7;
    switch (wireType) {
      case 0: {
        const [, after] = varint(head, afterTag);
        return { number, wireType, start: pos + afterTag, end: pos + after };
      }
      case 1:
        return { number, wireType, start: pos + afterTag, end: pos + afterTag + 8 };
      case 2: {
        const [length, after] = varint(head, afterTag);
        const end = pos + after + length;
        if (end > this.size) throw new ModelLoadError('The ONNX file is truncated.');
        return { number, wireType, start: pos + after, end };
      }
      case 5:
        return { number, wireType, start: pos + afterTag, end: pos + afterTag + 4 };
      default:
        throw new ModelLoadError(`The ONNX file is malformed (wire type ${wireType} at byte ${pos}).`);
    }
  }
}

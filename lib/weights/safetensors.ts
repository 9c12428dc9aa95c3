/**
 * The safetensors format (huggingface/safetensors), written and read without a dependency:
 *
 *   8 bytes   N, the header's length, unsigned 64-bit little-endian
 *   N bytes   JSON: { "<name>": { "dtype": "F32", "shape": [..], "data_offsets": [begin, end] }, ...,
 *                     "__metadata__": { "<key>": "<string>" } }, padded with spaces to 8 bytes
 *   rest      the tensors' bytes, little-endian, at their offsets from the end of the header
 *
 * The reader checks what the format promises (a header inside the file, known dtypes, offsets
 * that match the shapes, lie in the buffer, cover it without gaps or overlaps) and throws a
 * ParseError naming what was wrong. Float tensors come back as float32: F32 as stored, F16 and BF16
 * widened.
 */
import { ParseError } from '../errors.js';
import { bfloat16ToFloat, halfToFloat } from '../policy/onnx/half.js';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

export interface SafetensorsTensor {
  dtype: SafetensorsDtype;
  shape: number[];
  /** The values, widened to float32. */
  data: Float32Array;
}

export interface SafetensorsFile {
  tensors: Map<string, SafetensorsTensor>;
  metadata: Record<string, string>;
}

const BYTES: Record<SafetensorsDtype, number> = { F32: 4, F16: 2, BF16: 2 };
/** dtypes the format defines that the reader recognises but cannot use for adapter weights. */
const OTHER_DTYPES = new Set(['F64', 'I64', 'I32', 'I16', 'I8', 'U8', 'U16', 'U32', 'U64', 'BOOL', 'F8_E4M3', 'F8_E5M2']);

/** Writes float32 tensors (in the given order) and string metadata. */
export function writeSafetensors(tensors: ReadonlyArray<{ name: string; shape: number[]; data: Float32Array }>, metadata: Record<string, string> = {}): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (count !== t.data.length) throw new ParseError(`Tensor ${t.name} has ${t.data.length} values for shape [${t.shape.join(', ')}].`);
    if (t.name === '__metadata__' || t.name in header) throw new ParseError(`Tensor name ${t.name} is repeated or reserved.`);
    header[t.name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + count * 4] };
    offset += count * 4;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((8 + new TextEncoder().encode(json).length) % 8)) % 8);
  const headerBytes = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + headerBytes.length + offset);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(headerBytes.length), true);
  out.set(headerBytes, 8);
  let at = 8 + headerBytes.length;
  for (const t of tensors) {
    for (let i = 0; i < t.data.length; i++, at += 4) view.setFloat32(at, t.data[i], true);
  }
  return out;
}

export function readSafetensors(bytes: Uint8Array): SafetensorsFile {
  if (bytes.length < 8) throw new ParseError(`A safetensors file starts with an 8-byte header length; this one has ${bytes.length} bytes.`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getBigUint64(0, true);
  if (length > BigInt(bytes.length - 8)) throw new ParseError(`The safetensors header claims ${length} bytes; the file has ${bytes.length - 8} after the length.`);
  const headerEnd = 8 + Number(length);
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, headerEnd)));
  } catch (cause) {
    throw new ParseError('The safetensors header is not UTF-8 JSON.', { cause });
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw new ParseError('The safetensors header is not a JSON object.');
  const dataLength = bytes.length - headerEnd;
  const metadata: Record<string, string> = {};
  const tensors = new Map<string, SafetensorsTensor>();
  const ranges: Array<[number, number, string]> = [];
  for (const [name, entry] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) throw new ParseError('__metadata__ must be an object of strings.');
      for (const [key, value] of Object.entries(entry as Record<string, unknown>)) {
        if (typeof value !== 'string') throw new ParseError(`__metadata__.${key} must be a string.`);
        metadata[key] = value;
      }
      continue;
    }
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown } | null;
    if (e === null || typeof e !== 'object') throw new ParseError(`Tensor ${name}: its header entry is not an object.`);
    const { dtype, shape, data_offsets: offsets } = e;
    if (typeof dtype !== 'string' || !(dtype in BYTES)) {
      const known = typeof dtype === 'string' && OTHER_DTYPES.has(dtype);
      throw new ParseError(`Tensor ${name} has dtype ${String(dtype)}; ${known ? 'adapter weights must be' : 'safetensors float dtypes read here are'} F32, F16 or BF16.`);
    }
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new ParseError(`Tensor ${name}: shape must be a list of non-negative integers.`);
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw new ParseError(`Tensor ${name}: data_offsets must be [begin, end].`);
    }
    const [begin, end] = offsets as [number, number];
    const size = BYTES[dtype as SafetensorsDtype];
    const count = (shape as number[]).reduce((a, b) => a * b, 1);
    if (end < begin || end - begin !== count * size) throw new ParseError(`Tensor ${name}: data_offsets [${begin}, ${end}] do not hold ${count} ${dtype} values.`);
    if (end > dataLength) throw new ParseError(`Tensor ${name}: data_offsets end at ${end}, past the ${dataLength} data bytes.`);
    ranges.push([begin, end, name]);
    const data = new Float32Array(count);
    const at = headerEnd + begin;
    if (dtype === 'F32') for (let i = 0; i < count; i++) data[i] = view.getFloat32(at + i * 4, true);
    else if (dtype === 'F16') for (let i = 0; i < count; i++) data[i] = halfToFloat(view.getUint16(at + i * 2, true));
    else for (let i = 0; i < count; i++) data[i] = bfloat16ToFloat(view.getUint16(at + i * 2, true));
    tensors.set(name, { dtype: dtype as SafetensorsDtype, shape: shape as number[], data });
  }
  ranges.sort((a, b) => a[0] - b[0]);
  let covered = 0;
  for (const [begin, end, name] of ranges) {
    if (begin !== covered) throw new ParseError(`Tensor ${name} starts at ${begin}; the data before it ends at ${covered} (a ${begin < covered ? 'overlap' : 'gap'}).`);
    covered = end;
  }
  if (covered !== dataLength) throw new ParseError(`The tensors cover ${covered} of the ${dataLength} data bytes.`);
  return { tensors, metadata };
}

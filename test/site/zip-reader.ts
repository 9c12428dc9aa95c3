/**
 * An independent reader for the playground's downloads, written from the specs rather than from
 * the writers: zip (APPNOTE: end record, central directory, local headers; CRC-32 by node:zlib)
 * and the safetensors header (8-byte little-endian length, then JSON).
 */
import { crc32, inflateRawSync } from 'node:zlib';

/** Every file of a zip, by name; throws on any structural or CRC mismatch. */
export function readZip(bytes: Uint8Array): Map<string, Uint8Array> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let end = -1;
  for (let i = bytes.length - 22; i >= 0; i--) {
    if (view.getUint32(i, true) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw new Error('no end of central directory record');
  const count = view.getUint16(end + 10, true);
  const size = view.getUint32(end + 12, true);
  let at = view.getUint32(end + 16, true);
  if (at + size !== end) throw new Error(`central directory at ${at} of ${size} bytes does not end at the end record (${end})`);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const files = new Map<string, Uint8Array>();
  for (let n = 0; n < count; n++) {
    if (view.getUint32(at, true) !== 0x02014b50) throw new Error(`central directory entry ${n}: bad signature`);
    const method = view.getUint16(at + 10, true);
    const crc = view.getUint32(at + 16, true);
    const compressed = view.getUint32(at + 20, true);
    const length = view.getUint32(at + 24, true);
    const nameLength = view.getUint16(at + 28, true);
    const skip = view.getUint16(at + 30, true) + view.getUint16(at + 32, true);
    const local = view.getUint32(at + 42, true);
    const name = decoder.decode(bytes.subarray(at + 46, at + 46 + nameLength));
    at += 46 + nameLength + skip;
    if (view.getUint32(local, true) !== 0x04034b50) throw new Error(`${name}: bad local header signature`);
    const localName = decoder.decode(bytes.subarray(local + 30, local + 30 + view.getUint16(local + 26, true)));
    if (localName !== name) throw new Error(`${name}: the local header names ${localName}`);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    const raw = bytes.subarray(start, start + compressed);
    const data = method === 0 ? raw : method === 8 ? new Uint8Array(inflateRawSync(raw)) : null;
    if (!data) throw new Error(`${name}: compression method ${method}`);
    if (data.length !== length) throw new Error(`${name}: ${data.length} bytes, the directory says ${length}`);
    if (crc32(data) !== crc) throw new Error(`${name}: CRC-32 ${crc32(data).toString(16)}, the directory says ${crc.toString(16)}`);
    files.set(name, data);
  }
  return files;
}

export interface SafetensorsEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/** The tensors a safetensors file's header names, checked to tile its data exactly. */
export function safetensorsHeader(bytes: Uint8Array): Record<string, SafetensorsEntry> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + length))) as Record<string, SafetensorsEntry | Record<string, string>>;
  delete header.__metadata__;
  const tensors = header as Record<string, SafetensorsEntry>;
  const ranges = Object.values(tensors)
    .map((t) => t.data_offsets)
    .sort((a, b) => a[0] - b[0]);
  let next = 0;
  for (const [from, to] of ranges) {
    if (from !== next) throw new Error(`tensor data at ${from}, expected ${next}`);
    next = to;
  }
  if (8 + length + next !== bytes.length) throw new Error(`the tensors end at ${8 + length + next}, the file at ${bytes.length}`);
  for (const [name, t] of Object.entries(tensors)) {
    const width = t.dtype === 'F32' ? 4 : t.dtype === 'F16' || t.dtype === 'BF16' ? 2 : NaN;
    if (t.shape.reduce((a, b) => a * b, 1) * width !== t.data_offsets[1] - t.data_offsets[0]) throw new Error(`${name}: its shape does not fill its bytes`);
  }
  return tensors;
}

/**
 * The few protobuf wire-format pieces the ONNX graph rewrites need (the hidden-state output, the
 * merged LoRA weights): walking a message's fields without decoding its big tensors, and writing a
 * length-delimited field's header. Lengths and small varints are read as JS numbers (exact below 2^53).
 */
import { ModelLoadError } from '../../errors.js';

export const LENGTH_DELIMITED = 2;

export interface Field {
  number: number;
  wireType: number;
  /** Payload range for length-delimited fields. */
  start: number;
  end: number;
  /** The value of varint fields (small ones; enough for data types). */
  value: number;
  /** Where the field's tag starts. */
  tagStart: number;
}

export function* fields(bytes: Uint8Array, start: number, end: number): Generator<Field> {
  let pos = start;
  while (pos < end) {
    const tagStart = pos;
    const [tag, afterTag] = varint(bytes, pos);
    const number = Math.floor(tag / 8);
    const wireType = tag & 7;
    pos = afterTag;
    let value = 0;
    let payloadStart = pos;
    switch (wireType) {
      case 0: {
        [value, pos] = varint(bytes, pos);
        break;
      }
      case 1:
        pos += 8;
        break;
      case 2: {
        const [length, after] = varint(bytes, pos);
        payloadStart = after;
        pos = after + length;
        break;
      }
      case 5:
        pos += 4;
        break;
      default:
        throw new ModelLoadError(`The ONNX file is malformed (wire type ${wireType} at byte ${tagStart}).`);
    }
    if (pos > end) throw new ModelLoadError('The ONNX file is truncated.');
    yield { number, wireType, start: payloadStart, end: pos, value, tagStart };
  }
}

export function findField(bytes: Uint8Array, start: number, end: number, number: number): Field | undefined {
  for (const field of fields(bytes, start, end)) if (field.number === number && field.wireType === LENGTH_DELIMITED) return field;
  return undefined;
}

/** Reads a varint as a JS number (exact below 2^53: lengths and small values). */
export function varint(bytes: Uint8Array, pos: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (pos >= bytes.length) throw new ModelLoadError('The ONNX file is truncated.');
    const byte = bytes[pos++];
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 128;
  }
}

function encodeVarint(value: number): number[] {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

export function fieldHeader(number: number, length: number): Uint8Array {
  return Uint8Array.from([...encodeVarint(number * 8 + LENGTH_DELIMITED), ...encodeVarint(length)]);
}

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Whether `raw` is a whole buffer of its own, viewable as float32 on this platform without a copy. */
export function ownAlignedPiece(raw: Uint8Array): boolean {
  return LITTLE_ENDIAN && raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength;
}

/**
 * `bytes` as an array of its own: as it is when it is one already (a piece read on its own), else
 * a copy, so a view does not keep a whole file's buffer alive beside the bytes read out of it.
 */
export function ownBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

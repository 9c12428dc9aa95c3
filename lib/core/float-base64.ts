/**
 * Adapter tensors in stored JSON: float32 values as little-endian base64 text, read back with a
 * typed error for bad text, a wrong length or a non-finite value (the head adapter's and LoRA's
 * checkpoint and file formats).
 */
import { InvalidInputError } from '../errors.js';

export function encodeFloats(values: Float32Array): string {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((x, i) => view.setFloat32(i * 4, x, true));
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export function decodeFloats(value: unknown, count: number, at: string): Float32Array {
  if (typeof value !== 'string') throw new InvalidInputError(at, 'expected base64 text of float32 values.');
  let binary: string;
  try {
    binary = atob(value);
  } catch (error) {
    throw new InvalidInputError(at, 'is not valid base64.', { cause: error });
  }
  if (binary.length !== count * 4) throw new InvalidInputError(at, `holds ${binary.length} bytes; expected ${count} float32 values (${count * 4} bytes).`);
  const view = new DataView(new ArrayBuffer(binary.length));
  for (let i = 0; i < binary.length; i++) view.setUint8(i, binary.charCodeAt(i));
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    out[i] = view.getFloat32(i * 4, true);
    if (!Number.isFinite(out[i])) throw new InvalidInputError(at, `value ${i} is ${out[i]}; adapter weights must be finite.`);
  }
  return out;
}

/**
 * Frees a weight's array once an onnxruntime session holds its own copy: the sampler's streamed
 * pieces (streamed-model.ts), a LoRA head's table (head-runs.ts). Others that kept the array see
 * it empty (`isDetached`) and read the weight again.
 */

/**
 * Detaches the buffer of `values` where the array is the whole of it (a view into a larger one,
 * another weight's too, is left as it is): freed now where the runtime can
 * (ArrayBuffer.prototype.transfer), else by the next collection (a transfer to a clone nothing keeps).
 */
export function detach(values: ArrayBufferView): void {
  const buffer = values.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer };
  if (values.byteOffset !== 0 || values.byteLength !== buffer.byteLength || buffer.byteLength === 0) return;
  if (typeof buffer.transfer === 'function') buffer.transfer(0);
  else structuredClone(buffer, { transfer: [buffer] });
}

/** Whether `values`' buffer was detached (transferred): it has no bytes left. */
export function isDetached(values: ArrayBufferView): boolean {
  return values.byteLength === 0 && values.buffer.byteLength === 0;
}

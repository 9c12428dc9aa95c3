/**
 * How exactly the execution provider computes Sin and Cos, the two ops of a decoder export's
 * rotary embedding (the angle is position x frequency, up to the longest sequence in radians):
 * a one-op ONNX graph of each over those angles, against float64. WGSL bounds sin and cos only to
 * an absolute error of 2^-11 (4.9e-4) inside [-pi, pi], and SwiftShader takes about 1.9e-4 of it,
 * which alone moves a log-prob by more than 1e-4; a log-prob difference between WebGPU and WASM
 * reads differently when this is the cause.
 */
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

interface OrtLike {
  InferenceSession: { create(model: Uint8Array, options: Record<string, unknown>): Promise<{ run(feeds: Record<string, unknown>): Promise<Record<string, { data: unknown }>>; release(): Promise<void> }> };
  Tensor: new (type: 'float32', data: Float32Array, dims: number[]) => unknown;
}

export interface TrigError {
  /** Angles probed: 0 to this many radians. */
  upTo: number;
  sin: number;
  cos: number;
}

function oneOp(op: 'Sin' | 'Cos', n: number): Uint8Array {
  const info = (name: string) => ({ name, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT, shape: { dim: [{ dimValue: n }] } } } });
  return onnx.ModelProto.encode({ irVersion: 8, opsetImport: [{ domain: '', version: 17 }], graph: { name: op, node: [{ opType: op, input: ['x'], output: ['y'] }], input: [info('x')], output: [info('y')] } }).finish();
}

/** Largest |op(x) - Math.op(x)| over `n` angles evenly in [0, upTo], on `executionProvider`. */
export async function trigError(ort: OrtLike, executionProvider: string, upTo: number, n = 4096): Promise<TrigError> {
  const x = Float32Array.from({ length: n }, (_, i) => (upTo * i) / (n - 1));
  const error = async (op: 'Sin' | 'Cos') => {
    const session = await ort.InferenceSession.create(oneOp(op, n), { executionProviders: [executionProvider], logSeverityLevel: 3 });
    try {
      const y = (await session.run({ x: new ort.Tensor('float32', x, [n]) })).y.data as Float32Array;
      const exact = op === 'Sin' ? Math.sin : Math.cos;
      return y.reduce((worst, v, i) => Math.max(worst, Math.abs(v - exact(x[i]))), 0);
    } finally {
      await session.release();
    }
  };
  return { upTo, sin: await error('Sin'), cos: await error('Cos') };
}

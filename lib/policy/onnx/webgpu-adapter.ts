/**
 * The LM-head adapter on the GPU (lib/policy/head-adapter.ts has the definition): before rows of
 * logits are sampled or scored, one workgroup per row computes u = scale * (h A) and adds u B to
 * the row in place, so the logits never leave the GPU and the sampling kernels run unchanged.
 */
import type { HeadAdapterWeights } from '../head-adapter.js';
import type { LogitsDtype } from './webgpu-kernels.js';
import { BufferUsage, type GpuBufferLike, type GpuComputePipelineLike, type GpuDeviceLike } from './webgpu-types.js';

/** An adapter whose weights are GPU buffers (a trainer beside a WebGPU policy writes its A and B into them after every update). */
export interface GpuHeadAdapter {
  readonly kind: 'gpu';
  readonly hiddenSize: number;
  readonly vocabSize: number;
  readonly rank: number;
  readonly scale: number;
  /** d x r float32. */
  readonly a: GpuBufferLike;
  /** r x V float32. */
  readonly b: GpuBufferLike;
}

/** An adapter whose weights are in host memory. */
export interface HostHeadAdapter extends HeadAdapterWeights {
  readonly kind: 'host';
}

export type HeadAdapterBinding = HostHeadAdapter | GpuHeadAdapter;

/** Largest rank the kernels hold in workgroup memory. */
export const MAX_GPU_RANK = 64;
const WORKGROUP = 256;

/** WGSL that loads element i of a float32 or float16 (packed in u32 pairs) storage array. */
function loadFunction(name: string, array: string, dtype: LogitsDtype): string {
  return dtype === 'float32'
    ? `fn ${name}(i: u32) -> f32 { return ${array}[i]; }`
    : `fn ${name}(i: u32) -> f32 { let pair = unpack2x16float(${array}[i >> 1u]); return select(pair.x, pair.y, (i & 1u) == 1u); }`;
}

/**
 * Workgroup-wide u = scale * (h A) into `u_shared`: one reduction over the hidden size per rank
 * component. Needs `load_h`, `a`, `red`, `WG` and `MAX_RANK` in scope.
 */
const ADAPTER_INPUT_WGSL = /* wgsl */ `
fn adapter_input(lid: u32, h_base: u32, d: u32, r: u32, scale: f32) {
  for (var k = 0u; k < r; k++) {
    var s = 0.0;
    for (var i = lid; i < d; i += WG) { s += load_h(h_base + i) * a[i * r + k]; }
    red[lid] = s;
    workgroupBarrier();
    for (var w = WG / 2u; w > 0u; w = w / 2u) {
      if (lid < w) { red[lid] = red[lid] + red[lid + w]; }
      workgroupBarrier();
    }
    if (lid == 0u) { u_shared[k] = scale * red[0]; }
    workgroupBarrier();
  }
}

fn adapter_delta(j: u32, v: u32, r: u32) -> f32 {
  var acc = 0.0;
  for (var k = 0u; k < r; k++) { acc += u_shared[k] * b[k * v + j]; }
  return acc;
}
`;

function applyKernel(logits: LogitsDtype, hidden: LogitsDtype): string {
  const store =
    logits === 'float32'
      ? `@group(0) @binding(0) var<storage, read_write> logits: array<f32>;
fn update(base: u32, v: u32, lid: u32, r: u32) {
  for (var j = lid; j < v; j += WG) { logits[base + j] = logits[base + j] + adapter_delta(j, v, r); }
}`
      : // Rows start on an even element (even vocabulary), so each u32 holds two of this row's values.
        `@group(0) @binding(0) var<storage, read_write> logits: array<u32>;
fn update(base: u32, v: u32, lid: u32, r: u32) {
  for (var p = lid; p < v / 2u; p += WG) {
    let pair = unpack2x16float(logits[base / 2u + p]);
    logits[base / 2u + p] = pack2x16float(vec2<f32>(pair.x + adapter_delta(2u * p, v, r), pair.y + adapter_delta(2u * p + 1u, v, r)));
  }
}`;
  return /* wgsl */ `
struct Params { vocab: u32, hidden: u32, rank: u32, count: u32, scale: f32 }
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> rows: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> hidden_in: array<${hidden === 'float32' ? 'f32' : 'u32'}>;
@group(0) @binding(4) var<storage, read> a: array<f32>;
@group(0) @binding(5) var<storage, read> b: array<f32>;
const WG: u32 = ${WORKGROUP}u;
const MAX_RANK: u32 = ${MAX_GPU_RANK}u;
var<workgroup> red: array<f32, ${WORKGROUP}>;
var<workgroup> u_shared: array<f32, ${MAX_GPU_RANK}>;
${loadFunction('load_h', 'hidden_in', hidden)}
${ADAPTER_INPUT_WGSL}
${store}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let item = wid.x + wid.y * 65535u;
  if (item >= params.count) { return; }
  adapter_input(lid3.x, rows[item].y, params.hidden, params.rank, params.scale);
  update(rows[item].x, params.vocab, lid3.x, params.rank);
}
`;
}

/** Applies a GPU adapter to rows of a logits buffer; buffers are reused from call to call. */
export class GpuAdapterApplier {
  private readonly pipelines = new Map<string, GpuComputePipelineLike>();
  private readonly params: GpuBufferLike;
  private rows?: GpuBufferLike;

  constructor(private readonly device: GpuDeviceLike) {
    this.params = device.createBuffer({ size: 32, usage: BufferUsage.UNIFORM | BufferUsage.COPY_DST, label: 'webgrpo adapter params' });
  }

  /**
   * Encodes the update of the rows (element offsets into logits, and into hidden) into `pass`'s
   * encoder: call it right before the sampling or scoring dispatch, in the same submission.
   */
  encode(
    encoder: { beginComputePass(): import('./webgpu-types.js').GpuComputePassLike },
    adapter: GpuHeadAdapter,
    logits: { buffer: GpuBufferLike; dtype: LogitsDtype },
    hidden: { buffer: GpuBufferLike; dtype: LogitsDtype },
    rows: ReadonlyArray<readonly [number, number]>,
  ): void {
    const key = `${logits.dtype}/${hidden.dtype}`;
    let pipeline = this.pipelines.get(key);
    if (!pipeline) {
      const code = applyKernel(logits.dtype, hidden.dtype);
      pipeline = this.device.createComputePipeline({ label: 'webgrpo adapter', layout: 'auto', compute: { module: this.device.createShaderModule({ code, label: 'webgrpo adapter' }), entryPoint: 'main' } });
      this.pipelines.set(key, pipeline);
    }
    const data = new Uint32Array(rows.length * 2);
    rows.forEach(([z, h], i) => data.set([z, h], 2 * i));
    if (!this.rows || this.rows.size < data.byteLength) {
      this.rows?.destroy();
      this.rows = this.device.createBuffer({ size: Math.max(256, 2 ** Math.ceil(Math.log2(data.byteLength))), usage: BufferUsage.STORAGE | BufferUsage.COPY_DST, label: 'webgrpo adapter rows' });
    }
    this.device.queue.writeBuffer(this.rows, 0, data);
    const params = new ArrayBuffer(32);
    new Uint32Array(params, 0, 4).set([adapter.vocabSize, adapter.hiddenSize, adapter.rank, rows.length]);
    new Float32Array(params, 16, 1).set([adapter.scale]);
    this.device.queue.writeBuffer(this.params, 0, params);
    const bindGroup = this.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: logits.buffer } },
        { binding: 1, resource: { buffer: this.params } },
        { binding: 2, resource: { buffer: this.rows, size: data.byteLength } },
        { binding: 3, resource: { buffer: hidden.buffer } },
        { binding: 4, resource: { buffer: adapter.a } },
        { binding: 5, resource: { buffer: adapter.b } },
      ],
    });
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(Math.min(rows.length, 65535), Math.ceil(rows.length / 65535));
    pass.end();
  }

  destroy(): void {
    this.params.destroy();
    this.rows?.destroy();
    this.rows = undefined;
  }
}

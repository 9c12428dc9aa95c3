/**
 * WGSL for the adapter's forward, backward and AdamW update (the same maths as the head graphs,
 * with the derivation, in lib/train/graph/head-graph.ts). Token states are kept in chunks of at most one storage binding; every
 * per-token kernel runs on one chunk:
 *
 *   gather   window logits/hidden rows (float32 or float16) -> z, h of the chunk (float32)
 *   input    u[t] = s * (h[t] A)                                 one thread per (t, k)
 *   stats    log p'(y), H', log p(y); max' and log Z' of z'/T    one workgroup per token
 *   dinput   du[t] = dz'[t] B^T                                  one workgroup per token
 *   gradb    dB[:, j] += sum_t u[t] dz'[t, j]                    one thread per column j
 *   grada    dA[i, k] += s * sum_t h[t, i] du[t, k]              one thread per (i, k)
 *   sumsq    ||(dA, dB)||^2                                      one workgroup
 *   adamw    clip, decay, moments, update                        one thread per weight
 *
 * z' = z + u B is recomputed where it is needed (r multiply-adds per element) instead of stored.
 */
import { loadFunction } from '../../policy/onnx/webgpu-adapter.js';
import type { LogitsDtype } from '../../policy/onnx/webgpu-kernels.js';

export const WG = 256;
export const MAX_RANK = 64;

const PARAMS = /* wgsl */ `
struct Params { vocab: u32, hidden: u32, rank: u32, count: u32, inv_t: f32, scale: f32, extra: u32, pad: u32 }
@group(0) @binding(0) var<uniform> params: Params;
const WG: u32 = ${WG}u;
const MAX_RANK: u32 = ${MAX_RANK}u;
fn flat(wid: vec3<u32>) -> u32 { return wid.x + wid.y * 65535u; }
`;

const REDUCE = /* wgsl */ `
var<workgroup> red: array<f32, ${WG}>;
fn reduce_max(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] = max(red[lid], red[lid + s]); }
    workgroupBarrier();
  }
  let result = workgroupUniformLoad(&red[0]);
  workgroupBarrier();
  return result;
}
fn reduce_sum(lid: u32, v: f32) -> f32 {
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red[lid] = red[lid] + red[lid + s]; }
    workgroupBarrier();
  }
  let result = workgroupUniformLoad(&red[0]);
  workgroupBarrier();
  return result;
}
`;

/** d loss / d z'_j for one token, from p_j's log and the token's coefficients (g, c, H). */
const DZ = /* wgsl */ `
fn dz(logp: f32, is_target: bool, g: f32, c: f32, entropy: f32) -> f32 {
  let p = exp(logp);
  var d = 0.0;
  if (p > 0.0) { d = -p * (g + c * (logp + entropy)); }
  if (is_target) { d += g; }
  return d * params.inv_t;
}
`;

/** Rows of a model window into the chunk's z and h (items: logits offset, hidden offset, slot). */
export function gatherKernel(logits: LogitsDtype, hidden: LogitsDtype): string {
  const type = (dtype: LogitsDtype) => (dtype === 'float32' ? 'f32' : 'u32');
  return /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> logits_in: array<${type(logits)}>;
@group(0) @binding(2) var<storage, read> hidden_in: array<${type(hidden)}>;
@group(0) @binding(3) var<storage, read> items: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> z: array<f32>;
@group(0) @binding(5) var<storage, read_write> h: array<f32>;
${loadFunction('load_z', 'logits_in', logits)}
${loadFunction('load_h', 'hidden_in', hidden)}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let item = flat(wid);
  if (item >= params.count) { return; }
  let it = items[item];
  for (var j = lid3.x; j < params.vocab; j += WG) { z[it.z * params.vocab + j] = load_z(it.x + j); }
  for (var i = lid3.x; i < params.hidden; i += WG) { h[it.z * params.hidden + i] = load_h(it.y + i); }
}
`;
}

export const INPUT_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> h: array<f32>;
@group(0) @binding(2) var<storage, read> a: array<f32>;
@group(0) @binding(3) var<storage, read_write> u: array<f32>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let index = flat(wid) * WG + lid3.x;
  let r = params.rank;
  if (index >= params.count * r) { return; }
  let t = index / r;
  let k = index % r;
  var s = 0.0;
  for (var i = 0u; i < params.hidden; i++) { s += h[t * params.hidden + i] * a[i * r + k]; }
  u[index] = params.scale * s;
}
`;

/** Shared by the per-token kernels: u of the token in workgroup memory, and z'_j from it. */
const ADAPTED = /* wgsl */ `
var<workgroup> u_t: array<f32, ${MAX_RANK}>;
fn load_u(lid: u32, t: u32) {
  if (lid < params.rank) { u_t[lid] = u[t * params.rank + lid]; }
  workgroupBarrier();
}
fn adapted(t: u32, j: u32) -> f32 {
  var acc = 0.0;
  for (var k = 0u; k < params.rank; k++) { acc += u_t[k] * b[k * params.vocab + j]; }
  return z[t * params.vocab + j] + acc;
}
`;

export const STATS_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> targets: array<u32>;
@group(0) @binding(5) var<storage, read_write> stats: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> norms: array<vec4<f32>>;
${REDUCE}
${ADAPTED}
const LOWEST: f32 = -3.4028234e38;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let t = flat(wid);
  if (t >= params.count) { return; }
  let lid = lid3.x;
  let v = params.vocab;
  let inv_t = params.inv_t;
  let y = targets[t];
  load_u(lid, t);

  // Adapted logits z'.
  var m = LOWEST;
  for (var j = lid; j < v; j += WG) { m = max(m, adapted(t, j)); }
  let zmax = reduce_max(lid, m);
  var s = 0.0;
  var w = 0.0;
  for (var j = lid; j < v; j += WG) {
    let d = (adapted(t, j) - zmax) * inv_t;
    let e = exp(d);
    s += e;
    if (e > 0.0) { w += e * d; }
  }
  let total = reduce_sum(lid, s);
  let weighted = reduce_sum(lid, w);

  // Base logits z: the reference.
  var bm = LOWEST;
  for (var j = lid; j < v; j += WG) { bm = max(bm, z[t * v + j]); }
  let base_max = reduce_max(lid, bm);
  var bs = 0.0;
  for (var j = lid; j < v; j += WG) { bs += exp((z[t * v + j] - base_max) * inv_t); }
  let base_total = reduce_sum(lid, bs);

  if (lid == 0u) {
    let log_z = log(total);
    let logp = (adapted(t, y) - zmax) * inv_t - log_z;
    let ref_logp = (z[t * v + y] - base_max) * inv_t - log(base_total);
    stats[t] = vec4<f32>(logp, log_z - weighted / total, ref_logp, 0.0);
    norms[t] = vec4<f32>(zmax, log_z, 0.0, 0.0);
  }
}
`;

export const DINPUT_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> targets: array<u32>;
@group(0) @binding(5) var<storage, read> norms: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> coefs: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> du: array<f32>;
${REDUCE}
${ADAPTED}
${DZ}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let t = flat(wid);
  if (t >= params.count) { return; }
  let lid = lid3.x;
  let v = params.vocab;
  let r = params.rank;
  let coef = coefs[t];
  let norm = norms[t];
  let y = targets[t];
  load_u(lid, t);
  var acc: array<f32, ${MAX_RANK}>;
  if (coef.x != 0.0 || coef.y != 0.0) {
    for (var j = lid; j < v; j += WG) {
      let logp = (adapted(t, j) - norm.x) * params.inv_t - norm.y;
      let d = dz(logp, j == y, coef.x, coef.y, coef.z);
      for (var k = 0u; k < r; k++) { acc[k] += d * b[k * v + j]; }
    }
  }
  for (var k = 0u; k < r; k++) {
    let total = reduce_sum(lid, acc[k]);
    if (lid == 0u) { du[t * r + k] = total; }
  }
}
`;

export const GRADB_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> u: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> targets: array<u32>;
@group(0) @binding(5) var<storage, read> norms: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> coefs: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> gb: array<f32>;
${DZ}
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let j = flat(wid) * WG + lid3.x;
  let v = params.vocab;
  let r = params.rank;
  if (j >= v) { return; }
  var acc: array<f32, ${MAX_RANK}>;
  for (var t = 0u; t < params.count; t++) {
    let coef = coefs[t];
    if (coef.x == 0.0 && coef.y == 0.0) { continue; }
    var zp = z[t * v + j];
    for (var k = 0u; k < r; k++) { zp += u[t * r + k] * b[k * v + j]; }
    let norm = norms[t];
    let d = dz((zp - norm.x) * params.inv_t - norm.y, j == targets[t], coef.x, coef.y, coef.z);
    for (var k = 0u; k < r; k++) { acc[k] += u[t * r + k] * d; }
  }
  for (var k = 0u; k < r; k++) { gb[k * v + j] += acc[k]; }
}
`;

export const GRADA_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> h: array<f32>;
@group(0) @binding(2) var<storage, read> du: array<f32>;
@group(0) @binding(3) var<storage, read_write> ga: array<f32>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let index = flat(wid) * WG + lid3.x;
  let r = params.rank;
  let d = params.hidden;
  if (index >= d * r) { return; }
  let i = index / r;
  let k = index % r;
  var s = 0.0;
  for (var t = 0u; t < params.count; t++) { s += h[t * d + i] * du[t * r + k]; }
  ga[index] += params.scale * s;
}
`;

/** Sum of squares of ga then gb into out[0]; one workgroup. `extra` = element count of gb. */
export const SUMSQ_KERNEL = /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> ga: array<f32>;
@group(0) @binding(2) var<storage, read> gb: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
${REDUCE}
@compute @workgroup_size(${WG})
fn main(@builtin(local_invocation_id) lid3: vec3<u32>) {
  let lid = lid3.x;
  var s = 0.0;
  for (var i = lid; i < params.hidden * params.rank; i += WG) { s += ga[i] * ga[i]; }
  for (var i = lid; i < params.extra; i += WG) { s += gb[i] * gb[i]; }
  let total = reduce_sum(lid, s);
  if (lid == 0u) { out[0] = total; }
}
`;

export const ADAMW_KERNEL = /* wgsl */ `
struct Adam { count: u32, lr: f32, beta1: f32, beta2: f32, eps: f32, decay: f32, c1: f32, c2: f32, clip: f32 }
@group(0) @binding(0) var<uniform> o: Adam;
@group(0) @binding(1) var<storage, read_write> p: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> m: array<f32>;
@group(0) @binding(4) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let i = (wid.x + wid.y * 65535u) * ${WG}u + lid3.x;
  if (i >= o.count) { return; }
  let gi = g[i] * o.clip;
  let mi = o.beta1 * m[i] + (1.0 - o.beta1) * gi;
  let vi = o.beta2 * v[i] + (1.0 - o.beta2) * gi * gi;
  m[i] = mi;
  v[i] = vi;
  p[i] = p[i] * o.decay - (o.lr * (mi / o.c1)) / (sqrt(vi / o.c2) + o.eps);
}
`;

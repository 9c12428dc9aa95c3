/**
 * WGSL for the full-depth LoRA training pass (lib/lora/webgpu/model.ts), one kernel per operation
 * of lib/lora/kernels.ts, over float32 row-major buffers. Every kernel reads its sizes from one
 * uniform of twelve u32 and four f32 (Params), so the host side builds every dispatch the same way.
 *
 *   matmul     C[M, N] = alpha op(A) op(B) (+ C): strided operands cover x W, dy W^T, x A^T, u B^T,
 *              dy^T u and du^T x with no transposed copies; 16 x 16 tiles through workgroup memory
 *   gather     out[k] = src[index[k]] (rows): the embedding lookup and the scored rows
 *   scatter    dst[t] += sum of src[k] with index[k] = t: the scored rows' gradient (rows repeat:
 *              every completion's first token is predicted by the prompt's last row)
 *   bias, add  y[i] += b[i mod n]; y[i] += x[i]
 *   rmsnorm    forward (keeps 1 / rms) and backward, one thread per row
 *   rope       rotated halves, by +angle (forward) or -angle (backward), one thread per pair
 *   attention  forward: one thread per (head, query row), probabilities kept [heads, rows, rows]
 *              with zeros where a row may not look; backward in two kernels: dq and the score
 *              gradient per (head, query row), then dk and dv per (key row, kv head, d) summing
 *              over query rows and the heads of the group (no two threads write one element)
 *   swiglu     forward and backward, elementwise
 *   softmax    per scored row: log p of its token, entropy, max and log Z of z / T
 *   dlogits    dz = ((onehot - p) g + e dH/dz) / T per element
 */

export const PARAMS = /* wgsl */ `
struct Params { u0: u32, u1: u32, u2: u32, u3: u32, u4: u32, u5: u32, u6: u32, u7: u32, u8: u32, u9: u32, u10: u32, u11: u32, f0: f32, f1: f32, f2: f32, f3: f32 }
@group(0) @binding(0) var<uniform> p: Params;
fn flat(gid: vec3<u32>) -> u32 { return gid.x + gid.y * 65535u * 64u; }
`;

/** Threads per workgroup of the one-dimensional kernels. */
export const WG = 64;
export const TILE = 16;

export const ELEMENTWISE = (bindings: string, body: string) => /* wgsl */ `${PARAMS}
${bindings}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = flat(gid);
  ${body}
}`;

/**
 * A 16 x 16 tiled C[M, N] = alpha A B (+ C) with A(m, k) = a[m u3 + k u4] and B(k, n) = `loadB`
 * (kb, col in range): u0 M, u1 N, u2 K, u7 accumulate; f0 alpha. `bindings` declare c and B's
 * buffers from binding 2 on, `functions` what loadB calls.
 */
export const tiledMatmul = (bindings: string, functions: string, loadB: string) => /* wgsl */ `${PARAMS}
@group(0) @binding(1) var<storage, read> a: array<f32>;
${bindings}
${functions}
var<workgroup> ta: array<f32, ${TILE * TILE}>;
var<workgroup> tb: array<f32, ${TILE * TILE}>;
@compute @workgroup_size(${TILE}, ${TILE})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let row = wid.y * ${TILE}u + lid.y;
  let col = wid.x * ${TILE}u + lid.x;
  var acc = 0.0;
  let tiles = (p.u2 + ${TILE - 1}u) / ${TILE}u;
  for (var t = 0u; t < tiles; t++) {
    let ka = t * ${TILE}u + lid.x;
    var va = 0.0;
    if (row < p.u0 && ka < p.u2) { va = a[row * p.u3 + ka * p.u4]; }
    ta[lid.y * ${TILE}u + lid.x] = va;
    let kb = t * ${TILE}u + lid.y;
    var vb = 0.0;
    if (kb < p.u2 && col < p.u1) { vb = ${loadB}; }
    tb[lid.y * ${TILE}u + lid.x] = vb;
    workgroupBarrier();
    for (var k = 0u; k < ${TILE}u; k++) { acc += ta[lid.y * ${TILE}u + k] * tb[k * ${TILE}u + lid.x]; }
    workgroupBarrier();
  }
  if (row < p.u0 && col < p.u1) {
    let at = row * p.u1 + col;
    var prior = 0.0;
    if (p.u7 != 0u) { prior = c[at]; }
    c[at] = prior + p.f0 * acc;
  }
}`;

/** u0 M, u1 N, u2 K, u3 A's row stride, u4 A's k stride, u5 B's k stride, u6 B's column stride, u7 accumulate; f0 alpha. */
export const MATMUL = tiledMatmul(
  `@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;`,
  '',
  'b[kb * p.u5 + col * p.u6]',
);

/** u0 output rows, u1 row width. */
export const GATHER = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;`,
  `if (i >= p.u0 * p.u1) { return; }
  let k = i / p.u1;
  dst[i] = src[index[k] * p.u1 + i % p.u1];`,
);

/** u0 destination rows, u1 row width, u2 source rows. */
export const SCATTER = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> index: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<f32>;`,
  `if (i >= p.u0 * p.u1) { return; }
  let t = i / p.u1;
  let col = i % p.u1;
  var sum = 0.0;
  for (var k = 0u; k < p.u2; k++) { if (index[k] == t) { sum += src[k * p.u1 + col]; } }
  dst[i] += sum;`,
);

/** u0 elements, u1 bias length. */
export const BIAS = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;`,
  `if (i >= p.u0) { return; }
  y[i] += b[i % p.u1];`,
);

/** u0 elements. */
export const ADD = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;`,
  `if (i >= p.u0) { return; }
  y[i] += x[i];`,
);

/** u0 rows, u1 width; f0 eps. y = x / rms(x) * g, inv = 1 / rms. */
export const RMSNORM = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> g: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> inv: array<f32>;`,
  `if (i >= p.u0) { return; }
  let o = i * p.u1;
  var sum = 0.0;
  for (var j = 0u; j < p.u1; j++) { sum += x[o + j] * x[o + j]; }
  let r = 1.0 / sqrt(sum / f32(p.u1) + p.f0);
  inv[i] = r;
  for (var j = 0u; j < p.u1; j++) { y[o + j] = x[o + j] * r * g[j]; }`,
);

/** u0 rows, u1 width. dx += r g dy - x r^3 / n sum(dy g x). */
export const RMSNORM_BACKWARD = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> dy: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> inv: array<f32>;
@group(0) @binding(4) var<storage, read> g: array<f32>;
@group(0) @binding(5) var<storage, read_write> dx: array<f32>;`,
  `if (i >= p.u0) { return; }
  let o = i * p.u1;
  let r = inv[i];
  var acc = 0.0;
  for (var j = 0u; j < p.u1; j++) { acc += dy[o + j] * g[j] * x[o + j]; }
  let c = r * r * r * acc / f32(p.u1);
  for (var j = 0u; j < p.u1; j++) { dx[o + j] += r * g[j] * dy[o + j] - c * x[o + j]; }`,
);

/** u0 rows, u1 heads, u2 head dim; f0 +1 forward, -1 backward. In place. */
export const ROPE = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> cosines: array<f32>;
@group(0) @binding(2) var<storage, read> sines: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;`,
  `let hd = p.u2 / 2u;
  if (i >= p.u0 * p.u1 * hd) { return; }
  let k = i % hd;
  let t = i / (p.u1 * hd);
  let o = (i / hd) * p.u2;
  let c = cosines[t * hd + k];
  let s = p.f0 * sines[t * hd + k];
  let a = x[o + k];
  let b = x[o + hd + k];
  x[o + k] = a * c - b * s;
  x[o + hd + k] = b * c + a * s;`,
);

const ATTENTION_COMMON = /* wgsl */ `
fn visible(i: u32, j: u32) -> bool {
  let start = segment[i];
  return j <= i && (j < min(p.u4, start) || j >= start);
}
`;

/** u0 rows, u1 heads, u2 kv heads, u3 head dim, u4 prefix. */
export const ATTENTION = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> segment: array<u32>;
@group(0) @binding(5) var<storage, read_write> probs: array<f32>;
@group(0) @binding(6) var<storage, read_write> ctx: array<f32>;
${ATTENTION_COMMON}`,
  `let rows = p.u0;
  if (i >= p.u1 * rows) { return; }
  let h = i / rows;
  let r = i % rows;
  let D = p.u3;
  let qo = r * p.u1 * D + h * D;
  let kv = (h / (p.u1 / p.u2)) * D;
  let ks = p.u2 * D;
  let po = (h * rows + r) * rows;
  let scale = 1.0 / sqrt(f32(D));
  var m = -3.0e38;
  for (var j = 0u; j < rows; j++) {
    var score = 0.0;
    if (visible(r, j)) {
      for (var d = 0u; d < D; d++) { score += q[qo + d] * k[j * ks + kv + d]; }
      score = score * scale;
      m = max(m, score);
    }
    probs[po + j] = score;
  }
  var sum = 0.0;
  for (var j = 0u; j < rows; j++) {
    var e = 0.0;
    if (visible(r, j)) { e = exp(probs[po + j] - m); }
    probs[po + j] = e;
    sum += e;
  }
  for (var d = 0u; d < D; d++) { ctx[qo + d] = 0.0; }
  for (var j = 0u; j <= r; j++) {
    let w = probs[po + j] / sum;
    probs[po + j] = w;
    for (var d = 0u; d < D; d++) { ctx[qo + d] += w * v[j * ks + kv + d]; }
  }`,
);

/** As ATTENTION. dq (written) and ds[h, i, j] = p (dp - sum p dp) / sqrt(D). */
export const ATTENTION_BACKWARD_Q = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> dctx: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read> probs: array<f32>;
@group(0) @binding(5) var<storage, read_write> ds: array<f32>;
@group(0) @binding(6) var<storage, read_write> dq: array<f32>;`,
  `let rows = p.u0;
  if (i >= p.u1 * rows) { return; }
  let h = i / rows;
  let r = i % rows;
  let D = p.u3;
  let qo = r * p.u1 * D + h * D;
  let kv = (h / (p.u1 / p.u2)) * D;
  let ks = p.u2 * D;
  let po = (h * rows + r) * rows;
  let scale = 1.0 / sqrt(f32(D));
  var weighted = 0.0;
  for (var j = 0u; j < rows; j++) {
    var acc = 0.0;
    if (j <= r) { for (var d = 0u; d < D; d++) { acc += dctx[qo + d] * v[j * ks + kv + d]; } }
    ds[po + j] = acc;
    weighted += probs[po + j] * acc;
  }
  for (var d = 0u; d < D; d++) { dq[qo + d] = 0.0; }
  for (var j = 0u; j < rows; j++) {
    let g = probs[po + j] * (ds[po + j] - weighted) * scale;
    ds[po + j] = g;
    for (var d = 0u; d < D; d++) { dq[qo + d] += g * k[j * ks + kv + d]; }
  }`,
);

/** As ATTENTION. dk, dv (written) per (key row, kv head, d). */
export const ATTENTION_BACKWARD_KV = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> dctx: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<f32>;
@group(0) @binding(3) var<storage, read> probs: array<f32>;
@group(0) @binding(4) var<storage, read> ds: array<f32>;
@group(0) @binding(5) var<storage, read_write> dk: array<f32>;
@group(0) @binding(6) var<storage, read_write> dv: array<f32>;`,
  `let rows = p.u0;
  let D = p.u3;
  let ks = p.u2 * D;
  if (i >= rows * ks) { return; }
  let j = i / ks;
  let kvh = (i % ks) / D;
  let d = i % D;
  let groups = p.u1 / p.u2;
  var gk = 0.0;
  var gv = 0.0;
  for (var h = kvh * groups; h < (kvh + 1u) * groups; h++) {
    for (var r = j; r < rows; r++) {
      let po = (h * rows + r) * rows + j;
      let qo = r * p.u1 * D + h * D + d;
      gk += ds[po] * q[qo];
      gv += probs[po] * dctx[qo];
    }
  }
  dk[i] = gk;
  dv[i] = gv;`,
);

/** u0 elements. act = silu(gate) up. */
export const SWIGLU = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> gate: array<f32>;
@group(0) @binding(2) var<storage, read> up: array<f32>;
@group(0) @binding(3) var<storage, read_write> act: array<f32>;`,
  `if (i >= p.u0) { return; }
  let g = gate[i];
  act[i] = g / (1.0 + exp(-g)) * up[i];`,
);

/** u0 elements. dgate, dup (written). */
export const SWIGLU_BACKWARD = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> dact: array<f32>;
@group(0) @binding(2) var<storage, read> gate: array<f32>;
@group(0) @binding(3) var<storage, read> up: array<f32>;
@group(0) @binding(4) var<storage, read_write> dgate: array<f32>;
@group(0) @binding(5) var<storage, read_write> dup: array<f32>;`,
  `if (i >= p.u0) { return; }
  let g = gate[i];
  let sig = 1.0 / (1.0 + exp(-g));
  dup[i] = dact[i] * g * sig;
  dgate[i] = dact[i] * up[i] * sig * (1.0 + g * (1.0 - sig));`,
);

/** u0 scored rows, u1 vocabulary; f0 1 / T. stats[k] = (log p of the token, entropy, max, log Z) of z / T. */
export const SOFTMAX = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> z: array<f32>;
@group(0) @binding(2) var<storage, read> tokens: array<u32>;
@group(0) @binding(3) var<storage, read_write> stats: array<vec4<f32>>;`,
  `if (i >= p.u0) { return; }
  let o = i * p.u1;
  var m = -3.0e38;
  for (var v = 0u; v < p.u1; v++) { m = max(m, z[o + v] * p.f0); }
  var sum = 0.0;
  for (var v = 0u; v < p.u1; v++) { sum += exp(z[o + v] * p.f0 - m); }
  let logz = m + log(sum);
  var h = 0.0;
  for (var v = 0u; v < p.u1; v++) {
    let lp = z[o + v] * p.f0 - logz;
    h -= exp(lp) * lp;
  }
  stats[i] = vec4<f32>(z[o + tokens[i]] * p.f0 - logz, h, m, logz);`,
);

/** u0 scored rows, u1 vocabulary; f0 1 / T. coefs[k] = (d loss / d logp, d loss / d entropy). dz written over z. */
export const DLOGITS = ELEMENTWISE(
  `@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> stats: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> coefs: array<vec2<f32>>;
@group(0) @binding(4) var<storage, read_write> z: array<f32>;`,
  `if (i >= p.u0 * p.u1) { return; }
  let k = i / p.u1;
  let s = stats[k];
  let c = coefs[k];
  let lp = z[i] * p.f0 - s.w;
  let pr = exp(lp);
  var dh = 0.0;
  if (pr > 0.0) { dh = -pr * (lp + s.y); }
  var d = -c.x * pr + c.y * dh;
  if (i % p.u1 == tokens[k]) { d += c.x; }
  z[i] = d * p.f0;`,
);

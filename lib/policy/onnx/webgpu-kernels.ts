/**
 * WGSL for the log-prob math on the GPU: one workgroup per logits row, so a step reads back a few
 * bytes per row instead of the row itself.
 *
 * `sample` is the GPU form of lib/policy/sampling.ts (same steps, float32 instead of float64):
 * max and log-sum-exp of z = logits / T; the keep threshold from top-k, top-p and min-p, found
 * exactly by bisection over the order-preserving integer keys of the floats; the kept mass; and
 * the inverse CDF in vocabulary order via a workgroup prefix sum. With `use_mask`, each row has
 * an allowed-token bitset (constrained decoding, `mask_words` words per row): the disallowed
 * tokens drop out before the filters and the draw, and the kept mass is shifted by the largest
 * allowed z (so a mask of unlikely tokens does not underflow in float32). Output per row:
 * (token id bits, logprob, sampled logprob, 0).
 *
 * `score` gives, per (row, target token), the log-prob and the entropy of softmax(logits / T).
 */

export type LogitsDtype = 'float32' | 'float16';

const WORKGROUP = 256;

function common(dtype: LogitsDtype): string {
  const load =
    dtype === 'float32'
      ? `@group(0) @binding(0) var<storage, read> logits: array<f32>;
fn load(i: u32) -> f32 { return logits[i]; }`
      : `@group(0) @binding(0) var<storage, read> logits: array<u32>;
fn load(i: u32) -> f32 {
  let pair = unpack2x16float(logits[i >> 1u]);
  return select(pair.x, pair.y, (i & 1u) == 1u);
}`;
  return /* wgsl */ `
${load}

struct Params {
  vocab: u32,
  count: u32,
  greedy: u32,
  top_k: u32,
  inv_temp: f32,
  top_p: f32,
  log_min_p: f32,
  use_min_p: u32,
  mask_words: u32,
  use_mask: u32,
  pad0: u32,
  pad1: u32,
}
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read> items: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> results: array<vec4<f32>>;

const WG: u32 = ${WORKGROUP}u;
const LOWEST: f32 = -3.4028234e38;
var<workgroup> red_f: array<f32, ${WORKGROUP}>;
var<workgroup> red_u: array<u32, ${WORKGROUP}>;

fn reduce_max(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red_f[lid] = max(red_f[lid], red_f[lid + s]); }
    workgroupBarrier();
  }
  let result = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier(); // nobody overwrites the slot before everyone has read it
  return result;
}

fn reduce_sum(lid: u32, v: f32) -> f32 {
  red_f[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red_f[lid] = red_f[lid] + red_f[lid + s]; }
    workgroupBarrier();
  }
  let result = workgroupUniformLoad(&red_f[0]);
  workgroupBarrier(); // nobody overwrites the slot before everyone has read it
  return result;
}

fn reduce_count(lid: u32, v: u32) -> u32 {
  red_u[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { red_u[lid] = red_u[lid] + red_u[lid + s]; }
    workgroupBarrier();
  }
  let result = workgroupUniformLoad(&red_u[0]);
  workgroupBarrier(); // nobody overwrites the slot before everyone has read it
  return result;
}

// Order-preserving map from f32 to u32: a < b  <=>  key(a) < key(b).
fn key_of(f: f32) -> u32 {
  let b = bitcast<u32>(f);
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn z_at(base: u32, i: u32) -> f32 { return load(base + i) * params.inv_temp; }

fn item_index(wid: vec3<u32>) -> u32 { return wid.x + wid.y * 65535u; }
`;
}

export function sampleKernel(dtype: LogitsDtype): string {
  return /* wgsl */ `${common(dtype)}
@group(0) @binding(5) var<storage, read> masks: array<u32>;
var<workgroup> found: atomic<u32>;
var<workgroup> last_kept: atomic<u32>;

fn allowed(item: u32, i: u32) -> bool {
  if (params.use_mask == 0u) { return true; }
  return ((masks[item * params.mask_words + (i >> 5u)] >> (i & 31u)) & 1u) == 1u;
}

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let item = item_index(wid);
  if (item >= params.count) { return; }
  let lid = lid3.x;
  let V = params.vocab;
  let base = items[item].x;
  let u = bitcast<f32>(items[item].y);

  var m = LOWEST;
  var am = LOWEST;
  for (var i = lid; i < V; i += WG) {
    let z = z_at(base, i);
    m = max(m, z);
    if (allowed(item, i)) { am = max(am, z); }
  }
  let zmax = reduce_max(lid, m);
  // The largest allowed z: the greedy pick, and the shift of the kept mass.
  let amax = reduce_max(lid, am);
  var s = 0.0;
  for (var i = lid; i < V; i += WG) { s += exp(z_at(base, i) - zmax); }
  let total = reduce_sum(lid, s);

  if (lid == 0u) {
    atomicStore(&found, 0xffffffffu);
    atomicStore(&last_kept, 0u);
  }
  workgroupBarrier();

  if (params.greedy != 0u) {
    // First allowed index holding the allowed maximum; logprob under T = 1 (the host sets inv_temp = 1).
    var best = 0xffffffffu;
    for (var i = lid; i < V; i += WG) { if (z_at(base, i) == amax && allowed(item, i)) { best = min(best, i); } }
    atomicMin(&found, best);
    workgroupBarrier();
    if (lid == 0u) {
      results[item] = vec4<f32>(bitcast<f32>(atomicLoad(&found)), amax - zmax - log(total), 0.0, 0.0);
    }
    return;
  }

  // Keep threshold as a key: allowed tokens with key_of(z) >= theta are kept (theta 0 keeps all).
  var theta = 0u;
  if (params.top_k > 0u && params.top_k < V) {
    // Largest key with at least k allowed tokens at or above it: the k-th largest allowed value.
    var k = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = k | (1u << u32(bit));
      var c = 0u;
      for (var i = lid; i < V; i += WG) { c += select(0u, 1u, key_of(z_at(base, i)) >= cand && allowed(item, i)); }
      if (reduce_count(lid, c) >= params.top_k) { k = cand; }
    }
    theta = k;
  }
  if (params.top_p < 1.0) {
    var km = 0.0;
    for (var i = lid; i < V; i += WG) {
      let z = z_at(base, i);
      if (key_of(z) >= theta && allowed(item, i)) { km += exp(z - amax); }
    }
    let budget = params.top_p * reduce_sum(lid, km);
    // Largest key whose strictly-greater kept mass is still >= budget; one above it is the
    // smallest value whose strictly-greater mass is < budget.
    var k = 0u;
    for (var bit = 31i; bit >= 0i; bit--) {
      let cand = k | (1u << u32(bit));
      var mass = 0.0;
      for (var i = lid; i < V; i += WG) {
        let z = z_at(base, i);
        let key = key_of(z);
        if (key > cand && key >= theta && allowed(item, i)) { mass += exp(z - amax); }
      }
      if (reduce_sum(lid, mass) >= budget) { k = cand; }
    }
    theta = max(theta, k + 1u);
  }
  if (params.use_min_p != 0u) { theta = max(theta, key_of(amax + params.log_min_p)); }

  // Kept mass, then the inverse CDF over contiguous chunks, one per thread.
  let chunk = (V + WG - 1u) / WG;
  let start = min(lid * chunk, V);
  let end = min(start + chunk, V);
  var local = 0.0;
  var last = 0xffffffffu;
  for (var i = start; i < end; i++) {
    let z = z_at(base, i);
    if (key_of(z) >= theta && allowed(item, i)) { local += exp(z - amax); last = i; }
  }
  let kept = reduce_sum(lid, local);
  let goal = u * kept;

  red_f[lid] = local;
  workgroupBarrier();
  for (var offset = 1u; offset < WG; offset = offset * 2u) {
    var add = 0.0;
    if (lid >= offset) { add = red_f[lid - offset]; }
    workgroupBarrier();
    red_f[lid] = red_f[lid] + add;
    workgroupBarrier();
  }
  let inclusive = red_f[lid];
  let exclusive = inclusive - local;
  if (last != 0xffffffffu) { atomicMax(&last_kept, last); }
  if (local > 0.0 && goal >= exclusive && goal < inclusive) {
    var cumulative = exclusive;
    var pick = last;
    for (var i = start; i < end; i++) {
      let z = z_at(base, i);
      if (key_of(z) >= theta && allowed(item, i)) {
        cumulative += exp(z - amax);
        if (cumulative > goal) { pick = i; break; }
      }
    }
    atomicMin(&found, pick);
  }
  workgroupBarrier();
  if (lid == 0u) {
    var token = atomicLoad(&found);
    // Rounding can leave u * kept past the last cumulative sum: take the last kept token.
    if (token == 0xffffffffu) { token = atomicLoad(&last_kept); }
    let z = z_at(base, token);
    results[item] = vec4<f32>(bitcast<f32>(token), z - zmax - log(total), z - amax - log(kept), 0.0);
  }
}
`;
}

export function scoreKernel(dtype: LogitsDtype): string {
  return /* wgsl */ `${common(dtype)}
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let item = item_index(wid);
  if (item >= params.count) { return; }
  let lid = lid3.x;
  let V = params.vocab;
  let base = items[item].x;
  let wanted = items[item].y;

  var m = LOWEST;
  for (var i = lid; i < V; i += WG) { m = max(m, z_at(base, i)); }
  let zmax = reduce_max(lid, m);
  var s = 0.0;
  var w = 0.0;
  for (var i = lid; i < V; i += WG) {
    let shifted = z_at(base, i) - zmax;
    let e = exp(shifted);
    s += e;
    w += e * shifted;
  }
  let total = reduce_sum(lid, s);
  let weighted = reduce_sum(lid, w);
  if (lid == 0u) {
    let log_total = log(total);
    results[item] = vec4<f32>(z_at(base, wanted) - zmax - log_total, log_total - weighted / total, 0.0, 0.0);
  }
}
`;
}

/**
 * The k most likely tokens of a row under softmax(logits / T), most likely first, ties in
 * vocabulary order (lib/policy/logits.ts topLogprobs): k rounds of a workgroup arg-max, each over
 * the tokens after the previous round's winner in that order. Output per row: k (token id bits,
 * logprob) pairs, so a row reads back 8k bytes whatever the vocabulary.
 */
export function topKernel(dtype: LogitsDtype): string {
  return /* wgsl */ `${common(dtype)}
@group(0) @binding(4) var<storage, read_write> tops: array<vec2<f32>>;
var<workgroup> best_i: array<u32, ${WORKGROUP}>;

@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>) {
  let item = item_index(wid);
  if (item >= params.count) { return; }
  let lid = lid3.x;
  let V = params.vocab;
  let K = params.top_k;
  let base = items[item].x;

  var m = LOWEST;
  for (var i = lid; i < V; i += WG) { m = max(m, z_at(base, i)); }
  let zmax = reduce_max(lid, m);
  var s = 0.0;
  for (var i = lid; i < V; i += WG) { s += exp(z_at(base, i) - zmax); }
  let log_total = log(reduce_sum(lid, s));

  // (prev_z, prev_i): the last winner; the next is the largest z below it, or equal and later.
  var prev_z = 3.4028234e38;
  var prev_i = 0xffffffffu;
  var first = true;
  for (var j = 0u; j < K; j++) {
    var bz = LOWEST;
    var bi = 0xffffffffu;
    for (var i = lid; i < V; i += WG) {
      let z = z_at(base, i);
      let after = first || z < prev_z || (z == prev_z && i > prev_i);
      if (after && (z > bz || bi == 0xffffffffu)) { bz = z; bi = i; }
    }
    red_f[lid] = bz;
    best_i[lid] = bi;
    workgroupBarrier();
    for (var stride = WG / 2u; stride > 0u; stride = stride / 2u) {
      if (lid < stride) {
        let oz = red_f[lid + stride];
        let oi = best_i[lid + stride];
        let mine = best_i[lid];
        if (oi != 0xffffffffu && (mine == 0xffffffffu || oz > red_f[lid] || (oz == red_f[lid] && oi < mine))) {
          red_f[lid] = oz;
          best_i[lid] = oi;
        }
      }
      workgroupBarrier();
    }
    prev_z = workgroupUniformLoad(&red_f[0]);
    prev_i = workgroupUniformLoad(&best_i[0]);
    first = false;
    if (lid == 0u) { tops[item * K + j] = vec2<f32>(bitcast<f32>(prev_i), prev_z - zmax - log_total); }
    workgroupBarrier();
  }
}
`;
}

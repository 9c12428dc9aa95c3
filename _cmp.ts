import * as ort from 'onnxruntime-node';
import { readFileSync } from 'node:fs';
import { loadOnnxPolicy } from './lib/onnx.js';
import { benchPrompt } from './scripts/bench/_onnx-measure.js';
const dir = 'build/models/hub-shape/smollm2-135m';
const c = JSON.parse(readFileSync(`${dir}/config.json`, 'utf8'));
const G = 8, H = c.num_key_value_heads, D = c.head_dim, layers = c.num_hidden_layers;
const policy = await loadOnnxPolicy({ model: dir });
const tjs = (policy as any).parts.decoder.current;
const fresh = await ort.InferenceSession.create(`${dir}/onnx/model.onnx`, { extra: { 'session.intra_op.allow_spinning': '0' } });
async function loop(s: any, L0: number, steps: number) {
  let state: Record<string, any> = {};
  for (let i = 0; i < layers; i++) for (const kv of ['key', 'value']) state[`past_key_values.${i}.${kv}`] = new ort.Tensor('float32', new Float32Array(G * H * L0 * D).fill(0.01), [G, H, L0, D]);
  const cpu = process.cpuUsage(); const wall = performance.now();
  for (let t = 0; t < steps; t++) {
    const L = L0 + t;
    const feeds: Record<string, any> = { input_ids: new ort.Tensor('int64', new BigInt64Array(G).fill(100n), [G, 1]), attention_mask: new ort.Tensor('int64', new BigInt64Array(G * (L + 1)).fill(1n), [G, L + 1]), position_ids: new ort.Tensor('int64', new BigInt64Array(G).fill(BigInt(L)), [G, 1]), ...state };
    if (s.inputNames.includes('num_logits_to_keep')) feeds.num_logits_to_keep = new ort.Tensor('int64', BigInt64Array.of(0n), []);
    const out = await s.run(feeds);
    state = {}; for (const n of s.outputNames) if (n.startsWith('present')) state[n.replace('present.', 'past_key_values.')] = out[n];
  }
  const u = process.cpuUsage(cpu);
  return { cpu: Math.round((u.user + u.system) / 1000 / steps), wall: Math.round((performance.now() - wall) / steps) };
}
const prompt = benchPrompt(260);
await policy.generateGroup({ prompt, groupSize: 2, maxNewTokens: 4, seed: 0 });
for (let k = 0; k < 2; k++) {
  console.log('tjs session', JSON.stringify(await loop(tjs, 260, 32)));
  console.log('fresh session', JSON.stringify(await loop(fresh, 260, 32)));
  const cpu = process.cpuUsage(); const w = performance.now();
  await policy.generateGroup({ prompt, groupSize: 8, maxNewTokens: 64, seed: 1 });
  const u = process.cpuUsage(cpu);
  console.log('group', Math.round((u.user + u.system) / 1000), Math.round(performance.now() - w));
}
console.log(tjs.inputNames.includes('num_logits_to_keep'));

/**
 * The `lora` method's step in one Chromium tab, the CPU engine (TypeScript in the tab) against
 * the WebGPU engine (WGSL, lib/lora/webgpu), the same run on the bundled model: the policy samples
 * on WebAssembly for both; then the playground's WebGPU case, the policy on WebGPU and the adapter
 * trained on its device (the method's default there). Medians over the steps after the first
 * (which compiles the kernels and warms the JIT). Chromium's WebGPU here is SwiftShader.
 */
import { callBench, inChromium } from './_chromium.js';

const SHAPE = { groupSize: 8, batchSize: 2, maxNewTokens: 8, epochs: 1, seed: 1 };
const STEPS = 4;

interface Phases {
  sampleMs: number;
  trainMs: number;
  refreshMs: number;
  stepMs: number;
  tokens: number;
}
interface Measured {
  engine: string;
  backend: string;
  rows: Phases[];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function summary(rows: Phases[]): Phases {
  const later = rows.length > 1 ? rows.slice(1) : rows;
  const pick = (key: keyof Phases) => median(later.map((r) => r[key]));
  return { sampleMs: pick('sampleMs'), trainMs: pick('trainMs'), refreshMs: pick('refreshMs'), stepMs: pick('stepMs'), tokens: pick('tokens') };
}

export async function run(): Promise<string> {
  const cases = [
    { device: 'wasm', engine: 'cpu', label: 'WebAssembly', trains: 'CPU engine (TypeScript in the tab)' },
    { device: 'wasm', engine: 'webgpu', label: 'WebAssembly', trains: 'WebGPU engine (SwiftShader), a device of its own' },
    { device: 'webgpu', engine: 'auto', label: 'WebGPU (SwiftShader)', trains: "WebGPU engine on the policy's device (the default)" },
  ];
  const measured = await inChromium('/scripts/bench/pages/lora-run.html', async (page) => {
    const out: Array<(typeof cases)[number] & { phases: Phases; got: Measured }> = [];
    for (const c of cases) {
      console.log(`  policy on ${c.device}, engine ${c.engine}…`);
      const got = await callBench<Measured>(page, 'run', c.device, c.engine, SHAPE, STEPS);
      out.push({ ...c, phases: summary(got.rows), got });
    }
    return out;
  });
  const cpu = measured[0].phases;
  const f = (x: number) => x.toFixed(0);
  const rows = measured.map(
    (m) => `| ${m.label} | ${m.trains} | ${m.got.engine} | ${m.phases.tokens} | ${f(m.phases.sampleMs)} | ${f(m.phases.trainMs)} | ${f(m.phases.refreshMs)} | ${f(m.phases.stepMs)} | ${(m.phases.trainMs / cpu.trainMs).toFixed(2)} | ${(m.phases.stepMs / cpu.stepMs).toFixed(2)} |`,
  );
  return `## lora-tab: the lora method's step in one Chromium tab, CPU engine against WebGPU engine

The lora method (\`loraGrpo\`) on the bundled model (0.8M) in headless Chromium, per driver step: ${SHAPE.batchSize} items x ${SHAPE.groupSize} completions of up to ${SHAPE.maxNewTokens} tokens (digits task), one update per step, LoRA rank 8 on all seven projections of every layer. Phases cut at the run's events (sampling: step-start to the last rewards; update: to the train event; refresh: the step's \`refreshMs\`, the merge and the new session), wall ms, medians over ${STEPS - 1} steps after the first. The first two rows sample on WebAssembly and differ only in the training engine (\`engine: 'cpu'\` and \`engine: 'webgpu'\`); the third is the playground on WebGPU, where the method trains on the policy's own device by default.

| policy samples on | adapter trains on | engine | tokens trained | sampling ms | update ms | refresh ms | step ms | update x CPU engine | step x CPU engine |
|---|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

Chromium's WebGPU here is SwiftShader, a CPU implementation of WebGPU on this machine's two shared cores: these rows show the WebGPU path working in a tab and what it costs without a GPU. They say nothing about speed on a real GPU, where the same kernels run on the device.`;
}

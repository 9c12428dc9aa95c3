/**
 * The WebGPU LoRA engine's device memory on the bench model's shape (hidden 512, 8 layers, 8 heads
 * / 2 kv heads of 64, MLP 1536, vocabulary 8192, tied head; random weights, since bytes and kernel
 * cost depend only on the shape): the base weights stored as float32, fp16 and 4-bit MatMulNBits
 * (block 32, zero points, as onnxruntime's quantizer writes them), and the pass's peak buffer
 * bytes with activations kept and recomputed per layer, with the step times beside them, in
 * Chromium on SwiftShader.
 */
import { BENCH } from '../build-model/index.js';
import { callBench, inChromium } from './_chromium.js';
import { ms } from './_measure.js';

const RANK = 8;
const BLOCK = 32;
const FORMATS = ['f32', 'f16', 'q4'] as const;
type Format = (typeof FORMATS)[number];
/** A prompt of 8 tokens and 2 completions of 8: 24 rows, 16 scored (SwiftShader takes about a minute a step at the bench shape). */
const GROUP = {
  promptIds: [1, 17, 42, 99, 256, 1024, 4096, 77],
  completions: [
    [5, 6, 7, 8, 9, 10, 11, 12],
    [300, 301, 302, 303, 304, 305, 306, 307],
  ],
};

interface Step {
  forwardMs: number;
  stepMs: number;
  peakBytes: number;
}
interface Result {
  stats: { bytes: number; matrixBytes: Record<'f32' | 'f16' | 'bf16' | 'q4', number>; otherBytes: number };
  kept: Step;
  recomputed?: Step;
}

export async function run(): Promise<string> {
  const shape = {
    vocabSize: 8192,
    hiddenSize: BENCH.hiddenSize,
    intermediateSize: BENCH.intermediateSize,
    numLayers: BENCH.numLayers,
    numHeads: BENCH.numHeads,
    numKvHeads: BENCH.numKvHeads,
    headDim: BENCH.headDim,
    ropeTheta: BENCH.ropeTheta,
    rmsNormEps: BENCH.rmsNormEps,
  };
  console.log('  Chromium (SwiftShader): uploads and one step per format…');
  const results = await inChromium('/scripts/bench/pages/lora-gpu.html', async (page) => {
    page.setDefaultTimeout(0);
    return callBench<Record<Format, Result>>(page, 'run', shape, GROUP, RANK, FORMATS, BLOCK);
  });
  return report(results);
}

const SHAPE_TEXT = `hidden ${BENCH.hiddenSize}, ${BENCH.numLayers} layers, ${BENCH.numHeads} heads / ${BENCH.numKvHeads} kv heads of ${BENCH.headDim}, MLP ${BENCH.intermediateSize}, vocabulary 8192, tied head`;

function report(r: Record<Format, Result>): string {
  const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(2);
  const rows = GROUP.promptIds.length + GROUP.completions.flat().length;
  const fp32 = r.f32;
  const recomputed = fp32.recomputed!;
  // The 4-bit model keeps its (tied) embedding float32, so its float32 matrix bytes are the embedding's.
  const embedding = r.q4.stats.matrixBytes.f32;
  const projections = { f32: fp32.stats.matrixBytes.f32 - embedding, f16: r.f16.stats.matrixBytes.f16 - embedding / 2, q4: r.q4.stats.matrixBytes.q4 };
  const name: Record<Format, string> = { f32: 'float32', f16: 'fp16 (two a u32), embedding too', q4: `4-bit MatMulNBits projections (block ${BLOCK}, zero points), float32 embedding` };
  return [
    "## lora-gpu: the WebGPU LoRA engine's device memory, by base-weight format and with recomputation",
    '',
    `The bench model's shape (${SHAPE_TEXT}), random weights: bytes and kernel cost depend only on the shape. ` +
      `Weights: the device buffers of \`createWebgpuLoraModel\` as \`webgpuLoraModelStats\` counts them. One group (a prompt of ${GROUP.promptIds.length} tokens and ${GROUP.completions.length} completions of ${GROUP.completions[0].length}: ${rows} rows) ` +
      `forward and backward to every A and B of rank ${RANK} on all seven projections of every layer, in Chromium on SwiftShader, wall time of one run after a warm-up (on a shared machine: single runs, so ratios within about 10% are noise).`,
    '',
    '| base weights | weights on the device, MiB | x float32 | of which norms and biases, MiB | forward, ms | forward + backward, ms | step x float32 step |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...FORMATS.map((f) => {
      const x = r[f];
      return `| ${name[f]} | ${mib(x.stats.bytes)} | ${(x.stats.bytes / fp32.stats.bytes).toFixed(3)} | ${mib(x.stats.otherBytes)} | ${ms(x.kept.forwardMs)} | ${ms(x.kept.stepMs)} | ${(x.kept.stepMs / fp32.kept.stepMs).toFixed(2)} |`;
    }),
    '',
    `The layers' projections alone: float32 ${mib(projections.f32)} MiB; fp16 ${mib(projections.f16)} MiB (${(projections.f16 / projections.f32).toFixed(3)} x); ` +
      `4-bit ${mib(projections.q4)} MiB (${(projections.q4 / projections.f32).toFixed(3)} x: 16 bytes of nibbles, 4 of float32 scale and 0.5 of zero point per 32 weights, against 128).`,
    '',
    '| activations (float32 weights) | peak pass buffers, MiB | per row, KiB | x kept | forward + backward, ms | step x kept |',
    '|---|---:|---:|---:|---:|---:|',
    `| kept from forward to backward | ${mib(fp32.kept.peakBytes)} | ${(fp32.kept.peakBytes / rows / 1024).toFixed(0)} | 1.00 | ${ms(fp32.kept.stepMs)} | 1.00 |`,
    `| recomputed per layer in the backward | ${mib(recomputed.peakBytes)} | ${(recomputed.peakBytes / rows / 1024).toFixed(0)} | ${(recomputed.peakBytes / fp32.kept.peakBytes).toFixed(3)} | ${ms(recomputed.stepMs)} | ${(recomputed.stepMs / fp32.kept.stepMs).toFixed(2)} |`,
    '',
    "Peak pass buffers: the pass's own storage buffers alive at once (activations, gradients, the adapter's copies, scratch; not the weights), as `pass.bufferBytes()` counts them; in both modes the backward frees each layer's buffers once through it. " +
      "Recomputation keeps each layer's input (rows x hidden) instead of its activations; the head's logits (scored rows x vocabulary) are held in both. " +
      "SwiftShader is Chromium's software WebGPU on this machine's shared CPU cores: the times say what dequantizing in the kernels and recomputing cost relative to float32 there, and nothing about speed on a real GPU, where the fp16 and 4-bit kernels read 1/2 and about 1/6 of the weight bytes.",
  ].join('\n');
}

/**
 * The GPU check's verdict and its table: the two backends' results side by side, and whether they
 * computed the same numbers (the same sequences' log-probs to 1e-4; the first LoRA step's loss and
 * gradient norm, from the same adapter, to the tolerances below).
 */
import { compareLogprobs, compareScalar, type LogprobAgreement, type ScalarAgreement } from './agreement.js';
import type { BackendResult } from './backend.js';

/** The issue's bar for log-probs: the same tokens score the same on both backends. */
export const LOGPROB_TOLERANCE = 1e-4;
/** A GRPO loss at ratio 1 is about 0, so it is held absolutely. */
export const LOSS_TOLERANCE = 1e-4;
/** The gradient norm sums every A and B gradient over 30 layers' reductions, each run in another order on each backend. */
export const GRAD_NORM_TOLERANCE = 1e-3;

export interface Agreement {
  /** Both backends' scoring passes over the same sequences (the WebGPU sample). */
  scoring?: LogprobAgreement;
  /** The WebGPU sampler's own log-probs of its tokens against the WASM scoring pass of them. */
  samplerVsScoring?: LogprobAgreement;
  stepLoss?: ScalarAgreement;
  stepGradNorm?: ScalarAgreement;
}

export function agreementOf(gpu: BackendResult, wasm: BackendResult): Agreement {
  const out: Agreement = {};
  if (gpu.scoring && wasm.scoring) out.scoring = compareLogprobs(gpu.scoring.logprobs, wasm.scoring.logprobs, LOGPROB_TOLERANCE);
  if (gpu.sampled && wasm.scoring) out.samplerVsScoring = compareLogprobs(gpu.sampled.logprobs, wasm.scoring.logprobs, LOGPROB_TOLERANCE);
  const [a, b] = [gpu.lora?.steps[0], wasm.lora?.steps[0]];
  if (a && b) {
    out.stepLoss = compareScalar('first LoRA step loss', a.loss, b.loss, LOSS_TOLERANCE, 'absolute');
    out.stepGradNorm = compareScalar('first LoRA step gradient norm', a.gradNorm, b.gradNorm, GRAD_NORM_TOLERANCE, 'relative');
  }
  return out;
}

/** Every comparison the check promises was made and holds, and neither backend failed a phase. */
export function passed(agreement: Agreement, results: readonly BackendResult[]): boolean {
  const checks = [agreement.scoring, agreement.samplerVsScoring, agreement.stepLoss, agreement.stepGradNorm];
  return checks.every((c) => c?.ok === true) && results.every((r) => r.errors.length === 0);
}

const seconds = (ms: number | undefined) => (ms === undefined ? '-' : (ms / 1000).toFixed(2));
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

export function markdown(title: string, context: string[], results: readonly BackendResult[], agreement: Agreement, ok: boolean): string {
  const rows = results.map((r) => {
    const steps = r.lora?.steps ?? [];
    const later = steps.length > 1 ? median(steps.slice(1).map((s) => s.ms)) : undefined;
    const ratio = later !== undefined && r.scoring ? (later / r.scoring.ms).toFixed(2) : '-';
    const where = r.backend === 'webgpu' ? (r.adapter ? `${r.adapter.name}${r.adapter.software ? ' (software)' : ''}` : 'no adapter') : `${r.threads ?? '?'} threads`;
    return `| ${r.backend} | ${where} | ${seconds(r.loadMs)} | ${r.sample ? r.sample.tokensPerSecond.toFixed(1) : '-'} | ${seconds(r.scoring?.ms)} | ${seconds(steps[0]?.ms)} | ${seconds(later)} | ${ratio} | ${(r.peakRssBytes / 2 ** 20).toFixed(0)} |`;
  });
  const lp = (name: string, a: LogprobAgreement | undefined) =>
    a ? `- ${name}: max |difference| ${a.maxAbs.toExponential(2)} over ${a.tokens} tokens (tolerance ${a.tolerance}): **${a.ok ? 'agree' : 'DIFFER'}**${a.problem ? ` (${a.problem})` : ''}` : `- ${name}: not measured`;
  const sc = (a: ScalarAgreement | undefined, label: string) =>
    a ? `- ${a.name}: ${a.a.toExponential(6)} (webgpu) against ${a.b.toExponential(6)} (wasm), ${a.mode} difference ${(a.mode === 'absolute' ? a.absolute : a.relative).toExponential(2)} (tolerance ${a.tolerance}): **${a.ok ? 'agree' : 'DIFFER'}**` : `- ${label}: not measured`;
  const trig = results.flatMap((r) => (r.trig ? [`${r.backend} sin ${r.trig.sin.toExponential(1)}, cos ${r.trig.cos.toExponential(1)}`] : []));
  const errors = results.flatMap((r) => r.errors.map((e) => `- ${r.backend} ${e.phase} failed: ${e.message}`));
  return [
    `### ${title}`,
    '',
    ...context,
    '',
    '| backend | device | load s | sampling tok/s | scoring pass s | first LoRA step s | later LoRA step s | step x scoring | peak RSS MB |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    'Agreement (WebGPU against WASM on the same tokens):',
    '',
    lp('scoring passes of the WebGPU sample', agreement.scoring),
    lp('the WebGPU sampler\'s log-probs against the WASM scoring pass', agreement.samplerVsScoring),
    sc(agreement.stepLoss, 'first LoRA step loss'),
    sc(agreement.stepGradNorm, 'first LoRA step gradient norm'),
    ...(trig.length ? [`- for reading the log-probs: each backend's Sin and Cos (the rotary embedding's ops) over the run's angles, 0 to ${results.find((r) => r.trig)!.trig!.upTo} rad, largest |error| against float64: ${trig.join('; ')} (WGSL allows 4.9e-4 inside [-pi, pi])`] : []),
    ...(errors.length ? ['', 'Failures:', '', ...errors] : []),
    '',
    `Verdict: **${ok ? 'pass' : 'FAIL'}**.`,
    '',
  ].join('\n');
}

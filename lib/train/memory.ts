/**
 * Where a LoRA step's bytes go, from the model's shape and the step's settings, before anything
 * runs: the frozen weights as the engine holds them, the adapter with its gradient and AdamW's two
 * moments, each layer's input kept between the passes, the activations one layer run holds, a
 * chunk of the head's logits, and (when there is room) every layer's activations kept so the
 * backward need not recompute them. A step run part by part (the trainer's forwardBackward, for
 * every loss whose gradient is per completion) holds these for one micro-batch at a time; one run
 * as a forward then a backward holds them for the whole batch. The engine decides with the same
 * numbers (lora-graph-engine.ts), and the bench prints them beside the measured peak.
 *
 * Activations count float32 tensors as the graphs write them (onnxruntime reuses buffers between
 * ops, so the live set is usually smaller): an upper estimate, not a measurement.
 */
import { InvalidInputError } from '../errors.js';
import { LORA_MODULES, moduleDims, type DecoderShape, type LoraModule } from '../weights/decoder.js';
import { microBatches, rowsOf, rowWidth, type GraphGroup } from './graph/rows.js';

const FLOAT = 4;
/** Logits a head run holds at most (rows x vocab): 16 MB of float32. */
export const HEAD_LOGITS = 1 << 22;
/**
 * Padded tokens a micro-batch runs through a layer at once. Each of the engine's graph sessions
 * keeps an onnxruntime arena as large as its largest run, so this bounds them; at SmolLM2-135M's
 * shape, 8 x 128 runs as two micro-batches of four 166-token rows rather than one of eight: 138 MB
 * less at the peak, no more CPU time measured (BENCHMARKS "scale").
 */
export const DEFAULT_MICRO_BATCH_TOKENS = 768;
/**
 * What kept activations may take (the backward then recomputes nothing): a whole batch's, for a
 * forward then a backward; one part's at a time, for a step run part by part. Keeping a whole
 * batch costs the forward a copy of every kept tensor out of onnxruntime: at SmolLM2-135M's shape
 * it saves about 8% of a 4 x 64 step and costs 11% of an 8 x 128 one (BENCHMARKS "scale"), so
 * only small batches keep; part by part, an 8 x 128 step keeps two rows at a time (KEPT_PART_TOKENS).
 */
export const DEFAULT_ACTIVATION_BUDGET = 1 << 29;
/**
 * The padded tokens a part of a micro-batch keeping its activations aims at, run part by part,
 * and the fewest it is split down to. At SmolLM2-135M's shape, 8 x 128 (rows of 166 tokens), the
 * whole loop holding sampler and step together: parts of two rows 2.79-2.96x a scoring pass at a
 * 2273-2344 MB peak, single rows 3.24-3.31x at 2210 MB; parts of four, no faster than two and
 * about 600 MB more (BENCHMARKS "scale"). A budget that needs less takes smaller parts through
 * the activationBudget its plan gives (memory-plan.ts). Below MIN_KEPT_TOKENS a layer's graphs run
 * too few tokens to pay for their runs.
 */
export const KEPT_PART_TOKENS = 384;
export const MIN_KEPT_TOKENS = 128;
/**
 * The bytes a part keeps at most, whatever the engine's activation budget: two 166-token rows
 * keep 268 MB at SmolLM2-135M's shape and 480 MB at Qwen2.5-0.5B's, whose 8 x 128 step in a tab
 * peaked at 3553 MB in parts of two rows and 3494 in single rows (the step 2.70x and 2.89x the
 * scoring pass, the head's table then fed to each run; BENCHMARKS "scale-tab").
 */
export const KEPT_PART_BYTES = 384 * 2 ** 20;


/** A micro-batch's rows as the graphs run them: rows x width padded tokens. */
export interface RowsShape {
  rows: number;
  width: number;
}

/** The tensors a layer's backward reads of its forward, per micro-batch (what keeping them costs): what a matmul or the softmax made. */
export function keptLayerBytes(shape: DecoderShape, r: number, modules: number, at: RowsShape): number {
  const { hiddenSize: H, intermediateSize: I, numHeads: Hq, numKvHeads: Hkv, headDim: D } = shape;
  const tokens = at.rows * at.width;
  // The projections' outputs (q, k, v, the attention's mix, the residual after it, gate and up), the adapters' x A^T and two norms' scales; the rest is recomputed.
  const perToken = H + 2 * Hq * D + 2 * Hkv * D + 2 * I + modules * r + 2;
  return FLOAT * (tokens * perToken + at.rows * Hq * at.width * at.width);
}

/** What one layer run holds at its widest (a backward: its forward recomputed, then every gradient). */
export function layerRunBytes(shape: DecoderShape, at: RowsShape): number {
  const { hiddenSize: H, intermediateSize: I, numHeads: Hq, numKvHeads: Hkv, headDim: D } = shape;
  const tokens = at.rows * at.width;
  return FLOAT * (tokens * (8 * H + 6 * I + 6 * (Hq + 2 * Hkv) * D) + 4 * at.rows * Hq * at.width * at.width);
}

/** The scored rows a head run takes at once, and what that run holds (logits, log-softmax, probabilities, their gradient). */
export function headRowsFor(shape: DecoderShape): number {
  return Math.max(1, Math.floor(HEAD_LOGITS / shape.vocabSize));
}

export function headRunBytes(shape: DecoderShape, rows: number): number {
  return FLOAT * 4 * rows * shape.vocabSize;
}

/** Settings of a step to estimate (one prompt's group is `groupSize` completions). */
export interface StepMemorySettings {
  /** Prompts per step (groups trained together). Default 1. */
  prompts?: number;
  groupSize: number;
  promptTokens: number;
  /** Tokens per completion (the longest a step may sample: max new tokens). */
  completionTokens: number;
  /** LoRA rank. Default 8. */
  r?: number;
  targetModules?: readonly LoraModule[];
  /** How the base's projections are stored: 'q4' keeps them packed (half a byte a weight, plus scales), 'fp16' at 16 bits, 'fp32' as float32. Default 'fp32'. */
  dtype?: 'fp32' | 'fp16' | 'q4' | 'q4f16';
  /** Tied head (the embedding; the hub's small models). Default true. */
  tiedHead?: boolean;
  microBatchTokens?: number;
  /** Keep every layer's activations when they fit in this many bytes (the engine's activationBudget). Default 512 MiB. */
  activationBudget?: number;
  /**
   * The step runs part by part, each micro-batch's backward right after its forward (a training
   * engine's forwardBackward, which GrpoTrainer takes for every loss but topEntropyQuantile < 1:
   * perCompletionGradient). false: a forward of the whole batch, then its backward. Default true.
   */
  partByPart?: boolean;
}

export interface StepMemoryEstimate {
  /** The frozen base as the training engine holds it (the sampler's session holds its own copy). */
  weights: number;
  /** A and B, their gradient and AdamW's two moments. */
  adapter: number;
  /** Each layer's input, kept between the forward and the backward (of the whole batch, or part by part of the largest part). */
  layerInputs: number;
  /** Every layer's activations, when kept (of the whole batch, or part by part of the largest part kept: the parts take turns in one pool, kept-pool.ts; 0 when the backward recomputes them all). */
  activations: number;
  /** The widest layer run's activations. */
  layerRun: number;
  /** One head run (a chunk of rows x vocabulary). */
  head: number;
  total: number;
  /**
   * The sampler's onnxruntime session beside it: the weights again, onnxruntime's prepacked
   * copies of them and, for a tied head, the embedding folded transposed (SAMPLER_PER_WEIGHT_BYTE
   * of the weights, measured at SmolLM2-135M's shape in fp32; an fp16 base counts as float32, since
   * onnxruntime's CPU session widens it: 1236 MB loaded at that shape in fp16, 1268-1386 in fp32).
   */
  sampler: number;
  /** Both in memory at once, as a LoRA run holds them by default: `total + sampler`. */
  together: number;
  /** Taking turns (a LoRA run's `takeTurns`): the larger of the step (`total`) and sampling (the sampler and the adapter with its optimizer state). */
  inTurns: number;
  /**
   * Taking turns, what a turn may find the last one left to JavaScript's garbage collector: the
   * engine's weights are arrays read again for every step and dropped for the sampler's turn, and
   * V8 had not collected them when that turn began (arrays of 682-689 MB as the sampler's turns
   * began at SmolLM2-135M's shape, 538 MB of weights; 31 MB collecting, BENCHMARKS "scale"): one
   * read of `weights`. A run that collects at each turn (collectGarbage, Node) needs `inTurns`;
   * one that does not, this more.
   */
  turnGarbage: number;
  microBatchTokens: number;
  /** True when the activations do not fit the budget (part by part: some micro-batch's parts), so the backward recomputes those layers'. */
  recompute: boolean;
}

/** The rows a step's groups run as (every completion `completionTokens` long, the widest case). */
export function stepRows(shape: DecoderShape, settings: Pick<StepMemorySettings, 'prompts' | 'groupSize' | 'promptTokens' | 'completionTokens' | 'microBatchTokens'>): RowsShape[] {
  const group: GraphGroup = { promptIds: new Array<number>(settings.promptTokens).fill(0), completions: Array.from({ length: settings.groupSize }, () => new Array<number>(settings.completionTokens).fill(0)) };
  const groups = new Array<GraphGroup>(settings.prompts ?? 1).fill(group);
  return microBatches(rowsOf(groups, shape), settings.microBatchTokens ?? DEFAULT_MICRO_BATCH_TOKENS).map((rows) => ({ rows: rows.length, width: Math.max(...rows.map(rowWidth)) }));
}

/** The bytes keeping every layer's activations takes for these micro-batches. */
export function keptActivationBytes(shape: DecoderShape, r: number, modules: number, batches: readonly RowsShape[]): number {
  return shape.numLayers * batches.reduce((n, b) => n + keptLayerBytes(shape, r, modules, b), 0);
}

/**
 * Run part by part, the rows of a micro-batch each part keeps activations for: the micro-batch
 * halved until a part (every row counted `at.width` wide) is at most KEPT_PART_TOKENS and its
 * activations fit `budget` and KEPT_PART_BYTES, never below MIN_KEPT_TOKENS or a row; 0 when even
 * so they do not fit and the micro-batch recomputes, whole.
 */
export function keptPartRows(shape: DecoderShape, r: number, modules: number, at: RowsShape, budget: number): number {
  for (let rows = at.rows; ; rows = Math.ceil(rows / 2)) {
    const fits = keptActivationBytes(shape, r, modules, [{ rows, width: at.width }]) <= Math.min(budget, KEPT_PART_BYTES);
    if (fits && rows * at.width <= KEPT_PART_TOKENS) return rows;
    if (rows === 1 || Math.ceil(rows / 2) * at.width < MIN_KEPT_TOKENS) return fits ? rows : 0;
  }
}

/** The parts a step run part by part runs these micro-batches in, and whether each keeps its activations. */
export function stepParts(shape: DecoderShape, r: number, modules: number, batches: readonly RowsShape[], budget: number): Array<RowsShape & { keep: boolean }> {
  return batches.flatMap((b): Array<RowsShape & { keep: boolean }> => {
    const rows = keptPartRows(shape, r, modules, b, budget);
    if (rows === 0) return [{ ...b, keep: false }];
    return Array.from({ length: Math.ceil(b.rows / rows) }, (_, i) => ({ rows: Math.min(rows, b.rows - i * rows), width: b.width, keep: true }));
  });
}

/** Where a LoRA step's bytes go at this shape and these settings (weights, kept activations, logits chunk, adapter and optimizer), and whether the backward recomputes: the numbers the engine itself decides with. */
export function estimateStepMemory(shape: DecoderShape, settings: StepMemorySettings): StepMemoryEstimate {
  for (const key of ['groupSize', 'promptTokens', 'completionTokens'] as const) {
    if (!Number.isInteger(settings[key]) || settings[key] < 1) throw new InvalidInputError(key, `must be a positive integer, got ${String(settings[key])}.`);
  }
  const prompts = settings.prompts ?? 1;
  if (!Number.isInteger(prompts) || prompts < 1) throw new InvalidInputError('prompts', `must be a positive integer, got ${String(prompts)}.`);
  const r = settings.r ?? 8;
  const modules = settings.targetModules ?? LORA_MODULES;
  const microBatchTokens = settings.microBatchTokens ?? DEFAULT_MICRO_BATCH_TOKENS;
  const budget = settings.activationBudget ?? DEFAULT_ACTIVATION_BUDGET;
  const { hiddenSize: H, vocabSize: V, numLayers: L } = shape;
  const projections = LORA_MODULES.reduce((n, m) => {
    const { inDim, outDim } = moduleDims(shape, m);
    return n + inDim * outDim;
  }, 0);
  const packed = settings.dtype === 'q4' || settings.dtype === 'q4f16';
  // 4-bit blocks of 32: half a byte a weight, a float32 scale and half a byte of zero point a block.
  const projectionBytes = packed ? projections * (0.5 + (FLOAT + 0.5) / 32) : projections * (settings.dtype === 'fp16' ? 2 : FLOAT);
  const weightsWith = (perProjections: number) => L * (perProjections + FLOAT * 2 * H) + FLOAT * (V * H * (settings.tiedHead === false ? 2 : 1) + H);
  const weights = weightsWith(projectionBytes);
  const adapterParameters = L * modules.reduce((n, m) => n + r * (moduleDims(shape, m).inDim + moduleDims(shape, m).outDim), 0);
  const batches = stepRows(shape, { ...settings, prompts, microBatchTokens });
  const tokensOf = (b: RowsShape) => b.rows * b.width;
  const kept = (b: RowsShape) => keptActivationBytes(shape, r, modules.length, [b]);
  let layerInputs: number;
  let activations: number;
  let recompute: boolean;
  let layerRun: number;
  if (settings.partByPart ?? true) {
    // One part's layer inputs and kept activations at a time, and its layer runs: the largest part's.
    const parts = stepParts(shape, r, modules.length, batches, budget);
    recompute = parts.some((p) => !p.keep);
    layerInputs = FLOAT * (L + 1) * H * Math.max(...parts.map(tokensOf));
    activations = Math.max(0, ...parts.filter((p) => p.keep).map(kept));
    layerRun = Math.max(...parts.map((p) => layerRunBytes(shape, p)));
  } else {
    const whole = keptActivationBytes(shape, r, modules.length, batches);
    recompute = whole > budget;
    layerInputs = FLOAT * (L + 1) * H * batches.reduce((n, b) => n + tokensOf(b), 0);
    activations = recompute ? 0 : whole;
    layerRun = Math.max(...batches.map((b) => layerRunBytes(shape, b)));
  }
  const head = headRunBytes(shape, headRowsFor(shape));
  const adapter = FLOAT * 4 * adapterParameters;
  const total = weights + adapter + layerInputs + activations + layerRun + head;
  // onnxruntime's CPU kernels (Node, WebAssembly) widen an fp16 export's weights to float32 as the session is made.
  const sampler = Math.round(SAMPLER_PER_WEIGHT_BYTE * (settings.dtype === 'fp16' ? weightsWith(projections * FLOAT) : weights));
  return { weights, adapter, layerInputs, activations, layerRun, head, total, sampler, together: total + sampler, inTurns: Math.max(total, sampler + adapter), turnGarbage: weights, microBatchTokens, recompute };
}

/**
 * What a Node process running a LoRA run holds beside the sampler and the step: Node itself,
 * onnxruntime-node, transformers.js and the tokenizer (42 MB plain node, 113-132 under tsx, +28,
 * +47), and what the allocator keeps of the turn before. The plan counts it in Node, so a run's
 * memoryBudget is the process's resident memory: at SmolLM2-135M fp32 8 x 128 taking turns and
 * collecting, the estimate's 954 MB and this came to 1204 MB against phases measured at
 * 1106-1230 MB (BENCHMARKS, scale). Not counted in a page, whose budget is the tab's.
 */
export const NODE_RUNTIME_BYTES = 250e6;

/**
 * What the sampler's session holds per byte of the weights as the engine holds them: 865-880 MB
 * for SmolLM2-135M's 513 MB in fp32 in Node (BENCHMARKS, scale). Measured there only; other
 * shapes and dtypes are taken to be alike.
 */
export const SAMPLER_PER_WEIGHT_BYTE = 1.7;

/**
 * The engine's settings for a budget of bytes a step's activations may take: every layer's
 * activations kept when they fit it, and micro-batches whose layer runs fit a quarter of it
 * (counted in rows of 128 tokens, a prompt and a completion; at least 16 tokens).
 */
export function planMemory(shape: DecoderShape, memoryBudget: number): { activationBudget: number; microBatchTokens: number } {
  if (!(memoryBudget > 0) || !Number.isFinite(memoryBudget)) throw new InvalidInputError('memoryBudget', `must be a number of bytes > 0, got ${String(memoryBudget)}.`);
  const ROW = 128;
  let tokens = DEFAULT_MICRO_BATCH_TOKENS;
  while (tokens > 16 && layerRunBytes(shape, { rows: Math.max(1, tokens / ROW), width: Math.min(ROW, tokens) }) > memoryBudget / 4) tokens >>= 1;
  return { activationBudget: memoryBudget, microBatchTokens: tokens };
}

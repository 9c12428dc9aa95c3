/**
 * The ONNX `Policy`: validates requests, turns prompts into tokens, and runs one request at a time
 * through the decoder (onnxruntime sessions are not re-entrant, and the WebGPU buffers are shared).
 * It samples and scores; what training needs of it sits beside it and is queued through it: the
 * head adapter's surface (head.ts, which the head engine trains through), and the graph swaps and
 * the followed LoRA adapter (weight-swap.ts).
 */
import { InvalidInputError, UnsupportedError, WebgrpoError } from '../../errors.js';
import { compileResponseFormat, responseFormatKey, type ResponseGrammar } from '../../constrain/format.js';
import type { ResponseFormat, GenerateGroupOptions, GroupResult, Policy, PolicyInfo, PromptInput, ScoreOptions, ScoreResult } from '../../core/policy.js';
import type { TokenVocabulary } from '../../constrain/vocabulary.js';
import { MAX_TOP_LOGPROBS } from '../logits.js';
import { resolveSampling } from '../sampling.js';
import type { Decoder } from './decoder.js';
import type { FollowedAdapter } from './follow-adapter.js';
import type { GraphAccess, ModelGraph } from './graph.js';
import type { OrtSession } from './ort-types.js';
import { WeightSwap } from './weight-swap.js';
import { GroupBatcher, type GroupRequest } from './batch.js';
import { TrainableHead } from './head.js';
import { promptTokenIds, type PromptTokenizer } from './prompt.js';
import { scoreGroup } from './score.js';
import type { GpuDeviceLike } from './webgpu-types.js';

/** The most completions one group may ask of an ONNX policy (`groupSize` above it is an `InvalidInputError`). */
export const MAX_GROUP_SIZE = 64;
/** Rows decoding at once by default (generateGroups, concurrent calls); `maxBatchRows` at load changes it. */
export const MAX_BATCH_ROWS = 256;
/** Compiled response formats kept per policy. */
const MAX_GRAMMARS = 32;

export interface OnnxPolicyStats {
  /** Decoder forward passes run so far: a group costs one prefill pass plus one per step. */
  forwardPasses: number;
  /** Bytes of logits read back to the host for sampling and scoring... */
  readbackBytes: number;
  /** ...and what reading back every needed row whole would have cost. */
  fullRowBytes: number;
  /** Logits rows sampled or scored. */
  rows: number;
  /** Bytes of allowed-token bitsets uploaded for constrained rows (WebGPU; 0 where the mask stays in host memory). */
  maskBytes: number;
}

export interface OnnxTokenizer extends PromptTokenizer {
  decode(ids: number[], options: { skip_special_tokens: boolean }): string;
}

export interface OnnxPolicyParts {
  info: PolicyInfo;
  tokenizer: OnnxTokenizer;
  decoder: Decoder;
  vocabSize: number;
  eosIds: ReadonlySet<number>;
  /** Longest prompt + completion the model takes; Infinity when the config does not say. */
  maxPositions: number;
  /** Upper bound on logits elements one forward pass may produce (bounds prefill and scoring windows). */
  maxLogits: number;
  /** Width of the final hidden state, when the decoder exposes it (`hiddenState: true`). */
  hiddenSize?: number;
  /** The WebGPU device the sessions run on (holding the logits); undefined off WebGPU. */
  device?: GpuDeviceLike;
  /** Most rows decoding at once (default MAX_BATCH_ROWS). */
  maxBatchRows?: number;
  /** Whether padded rows may share a batch (passes.ts probePadding); default 'padded'. */
  batchMode?: 'padded' | 'equal-length';
  /** The bytes each logits column writes and the tokens that end an output (token-table.ts), for `responseFormat`; absent: constrained decoding is refused. */
  vocabulary?: () => TokenVocabulary;
  /** The base model's files and sessions of other graphs of it (replaceGraph); absent: the weights cannot be replaced. */
  graph?: GraphAccess;
  /** Puts `session` in place of the decoder's and releases the old one (unless releaseSession released it already). */
  replaceSession?(session: OrtSession): Promise<void>;
  /** Releases the decoder's session; the next replaceSession puts one in its place. */
  releaseSession?(): Promise<void>;
  release(): Promise<void>;
}

export class OnnxPolicy implements Policy {
  readonly info: PolicyInfo;
  /**
   * The LM head's adapter and the frozen model's per-token states (`webgrpo/grad`); present when
   * the policy was loaded with `hiddenState: true`.
   */
  readonly head: TrainableHead | undefined;
  private tail: Promise<unknown> = Promise.resolve();
  private disposed = false;
  private readonly batcher: GroupBatcher;
  /** Built on the first constrained request. */
  private vocabulary: TokenVocabulary | undefined;
  /** Compiled formats by their JSON, so a schema compiles once and its masks are shared. */
  private readonly grammars = new Map<string, ResponseGrammar>();
  /** The graph swaps and the followed LoRA adapter. */
  private readonly weights: WeightSwap;

  constructor(private readonly parts: OnnxPolicyParts) {
    this.info = {
      ...parts.info,
      responseFormats: parts.vocabulary !== undefined,
      ...(Number.isFinite(parts.maxPositions) ? { maxPositions: parts.maxPositions } : {}),
    };
    const { decoder, vocabSize, hiddenSize, maxLogits, device, tokenizer } = parts;
    this.head =
      decoder.hiddenName !== undefined && hiddenSize !== undefined
        ? new TrainableHead({
            decoder,
            vocabSize,
            hiddenSize,
            maxLogits,
            device,
            schedule: (task) => this.serialize(() => this.guard(task)),
            promptIds: (input) => promptTokenIds(tokenizer, input),
          })
        : undefined;
    this.weights = new WeightSwap(parts);
    this.batcher = new GroupBatcher({
      decoder,
      vocabSize,
      prefillWindow: this.prefillWindow(),
      maxRows: parts.maxBatchRows ?? MAX_BATCH_ROWS,
      padding: parts.batchMode !== 'equal-length',
      lock: (task) => this.enqueue(() => this.guard(task)),
    });
  }

  generateGroup(options: GenerateGroupOptions): Promise<GroupResult> {
    return this.generateGroups([options]).then(([group]) => group);
  }

  /**
   * Several groups decoded together: each prompt is prefilled once and every row of every group
   * runs in the same forward passes (batch.ts). Each group is the same as when sampled alone.
   * Calls made while a batch runs join it between two steps.
   */
  async generateGroups(requests: GenerateGroupOptions[]): Promise<GroupResult[]> {
    this.checkOpen();
    if (!Array.isArray(requests) || requests.length === 0) throw new InvalidInputError('requests', 'must be a non-empty array of generateGroup options.');
    const checked = requests.map((options) => this.groupRequest(options));
    return Promise.all(checked.map((request) => this.batcher.submit(request)));
  }

  private groupRequest(options: GenerateGroupOptions): GroupRequest {
    const { groupSize, maxNewTokens, seed, stop = [], onToken } = options;
    if (!(Number.isInteger(groupSize) && groupSize >= 1 && groupSize <= MAX_GROUP_SIZE)) {
      throw new InvalidInputError('groupSize', `must be an integer from 1 to ${MAX_GROUP_SIZE}, got ${groupSize}.`);
    }
    if (!(Number.isInteger(maxNewTokens) && maxNewTokens > 0)) {
      throw new InvalidInputError('maxNewTokens', `must be a positive integer, got ${maxNewTokens}.`);
    }
    if (seed !== undefined && !Number.isSafeInteger(seed)) throw new InvalidInputError('seed', `must be a safe integer, got ${seed}.`);
    if (!Array.isArray(stop) || stop.some((s) => typeof s !== 'string' || s.length === 0)) {
      throw new InvalidInputError('stop', 'must be an array of non-empty strings.');
    }
    if (onToken !== undefined && typeof onToken !== 'function') throw new InvalidInputError('onToken', 'must be a function.');
    const topLogprobs = checkTopLogprobs(options.topLogprobs);
    const sampling = resolveSampling(options);
    const promptIds = promptTokenIds(this.parts.tokenizer, options);
    this.checkContext(promptIds.length + maxNewTokens, 'maxNewTokens');
    this.checkOnePass(this.parts.decoder.inputNames.includes('num_logits_to_keep') ? 1 : promptIds.length, 'prompt');
    const { eosIds, tokenizer } = this.parts;
    return {
      promptIds,
      groupSize,
      maxNewTokens,
      sampling,
      seed: seed ?? Math.floor(Math.random() * 2 ** 32), // unseeded calls only
      stop,
      eosIds,
      topLogprobs,
      signal: options.signal,
      onToken,
      decode: (ids) => tokenizer.decode(ids, { skip_special_tokens: true }),
      ...(options.responseFormat !== undefined ? { constraint: this.constraint(options.responseFormat) } : {}),
    };
  }

  private constraint(format: ResponseFormat): NonNullable<GroupRequest['constraint']> {
    if (!this.parts.vocabulary) throw new UnsupportedError('responseFormat needs the tokenizer vocabulary, which this policy was built without.');
    const key = responseFormatKey(format);
    let grammar = this.grammars.get(key);
    if (!grammar) {
      grammar = compileResponseFormat(format);
      // A server sees formats from its callers: bound what it keeps.
      if (this.grammars.size >= MAX_GRAMMARS) this.grammars.clear();
      this.grammars.set(key, grammar);
    }
    this.vocabulary ??= this.parts.vocabulary();
    return { matcher: grammar.matcher(this.vocabulary), vocabulary: this.vocabulary };
  }

  scoreCompletions(options: ScoreOptions): Promise<ScoreResult> {
    return this.serialize(async () => {
      const { completions, temperature = 1 } = options;
      const { vocabSize } = this.parts;
      if (!Array.isArray(completions) || completions.length === 0) {
        throw new InvalidInputError('completions', 'must be a non-empty array of token id arrays.');
      }
      completions.forEach((tokens, i) => {
        if (!Array.isArray(tokens) || tokens.some((t) => !Number.isInteger(t) || t < 0 || t >= vocabSize)) {
          throw new InvalidInputError(`completions[${i}]`, `must be an array of token ids from 0 to ${vocabSize - 1}.`);
        }
      });
      if (!(Number.isFinite(temperature) && temperature >= 0)) {
        throw new InvalidInputError('temperature', `must be a finite number >= 0, got ${temperature}.`);
      }
      const topLogprobs = checkTopLogprobs(options.topLogprobs);
      const promptIds = promptTokenIds(this.parts.tokenizer, options);
      this.checkContext(promptIds.length + Math.max(...completions.map((c) => c.length)), 'completions');
      if (completions.every((c) => c.length === 0)) {
        return { logprobs: completions.map(() => []), entropies: completions.map(() => []), ...(topLogprobs > 0 ? { topLogprobs: completions.map(() => []) } : {}) };
      }
      this.checkOnePass(promptIds.length + Math.max(...completions.map((c) => c.length)) - 1, 'completions');
      return this.guard(() =>
        scoreGroup(this.parts.decoder, vocabSize, this.parts.maxLogits, { promptIds, completions, temperature, topLogprobs, signal: options.signal }),
      );
    });
  }

  /**
   * The base model as its files hold it: the ONNX graph, its external data and config.json (what a
   * LoRA merge starts from). The files are read again once nothing holds the last read's bytes:
   * the policy does not keep a second copy of the weights beside its session's.
   */
  modelGraph(): Promise<ModelGraph> {
    this.checkOpen();
    return this.weights.modelGraph();
  }

  /**
   * Samples and scores with the weights of `graph` from now on: another graph of the same model
   * (the same inputs and outputs; LoRA-merged weights, mergeLoraIntoOnnx). Call it between
   * requests: generations already running finish on the old weights first. A graph whose inputs
   * or outputs differ is refused and the policy keeps its weights. Passing the base graph (`modelGraph().graph`) returns to the base model.
   */
  async replaceGraph(graph: Uint8Array): Promise<void> {
    this.checkOpen();
    this.weights.checkReplaceable();
    if (!(graph instanceof Uint8Array) || graph.length === 0) throw new InvalidInputError('graph', 'must be the bytes of an ONNX model.');
    await this.batcher.drained();
    await this.serialize(() => this.weights.replaceGraph(graph), false);
  }

  /**
   * Samples and scores under a LoRA adapter's current A and B (lib/lora's layout, what the graph
   * training engine trains) from now on. The first call rewrites the model's graph so its
   * projections take A and B as inputs and builds that session; later calls with the same rank
   * and modules only hand over the new arrays: no merge, no new session. replaceGraph returns to
   * plain weights.
   */
  async followAdapter(adapter: FollowedAdapter): Promise<void> {
    this.checkOpen();
    this.weights.checkReplaceable();
    if (adapter === null || typeof adapter !== 'object' || !Array.isArray(adapter.layers)) throw new InvalidInputError('adapter', 'must be a LoRA adapter { config: { r }, scale, layers }.');
    await this.batcher.drained();
    await this.serialize(() => this.weights.followAdapter(adapter), false);
  }

  /**
   * Frees the sampler's onnxruntime session (its weights, their prepacked copies, the folded
   * head) until the next request that runs the decoder, which builds it again as it was built:
   * the followed adapter's rewritten graph, or the base graph, with the same options, so its
   * log-probs are the same bit for bit. For a training step that needs the memory (a LoRA run's
   * `takeTurns`); the rebuild costs about a second at SmolLM2-135M's size (BENCHMARKS, scale).
   * Refused (UnsupportedError) while a graph given to replaceGraph runs: its bytes are not kept.
   */
  async releaseSession(): Promise<void> {
    this.checkOpen();
    this.weights.checkReplaceable();
    await this.batcher.drained();
    await this.serialize(() => this.weights.releaseSession(), false);
  }

  /** Whether the sampler's session is released (releaseSession) and is built again on the next request. */
  get sessionReleased(): boolean {
    return this.weights.sessionReleased;
  }

  async encode(text: string): Promise<number[]> {
    if (typeof text !== 'string') throw new InvalidInputError('text', 'must be a string.');
    this.checkOpen();
    return this.parts.tokenizer.encode(text, { add_special_tokens: false });
  }

  /** The token ids a prompt becomes (chat template applied to messages), as sampling and scoring see it. */
  promptIds(input: PromptInput): number[] {
    this.checkOpen();
    return promptTokenIds(this.parts.tokenizer, input);
  }

  /** The prompt's token ids (promptIds) as text, special tokens and chat markers included. */
  async renderPrompt(input: PromptInput): Promise<string> {
    return this.decode(this.promptIds(input), { skipSpecialTokens: false });
  }

  /** Token ids back to text; special tokens are skipped unless `skipSpecialTokens` is false. */
  async decode(tokenIds: number[], options?: { skipSpecialTokens?: boolean }): Promise<string> {
    this.checkOpen();
    const skip = options?.skipSpecialTokens ?? true;
    return tokenIds.length === 0 ? '' : this.parts.tokenizer.decode(tokenIds, { skip_special_tokens: skip });
  }

  stats(): OnnxPolicyStats {
    return { forwardPasses: this.parts.decoder.runs, ...this.parts.decoder.logits.stats };
  }

  dispose(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    this.disposed = true;
    // Let running generations and queued work finish, then free the GPU buffers and the sessions.
    // Nothing new is queued once disposed, except the steps of generations already running.
    return (async () => {
      await this.batcher.drained();
      await this.tail;
      this.parts.decoder.logits.destroy();
      await this.parts.release();
    })();
  }

  /** Queues `task` after the running one; calls made after dispose() are refused. */
  private serialize<T>(task: () => Promise<T>, runsDecoder = true): Promise<T> {
    try {
      this.checkOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    return this.enqueue(task, runsDecoder);
  }

  /**
   * Queues `task` after the running one (the batcher's steps, also after dispose() was called). A
   * task that runs the decoder first builds its session again if it was released; the weight
   * swaps (`runsDecoder` false) do not need it.
   */
  private enqueue<T>(task: () => Promise<T>, runsDecoder = true): Promise<T> {
    const result = this.tail.then(runsDecoder ? () => this.guard(() => this.weights.ready()).then(task) : task);
    this.tail = result.catch(() => undefined);
    return result;
  }

  private checkOpen(): void {
    if (this.disposed) throw new InvalidInputError('policy', 'was disposed; load it again with loadOnnxPolicy().');
  }

  private checkContext(length: number, argument: string): void {
    if (length > this.parts.maxPositions) {
      throw new InvalidInputError(argument, `prompt plus completion (${length} tokens) exceeds the model's context of ${this.parts.maxPositions} tokens.`);
    }
  }

  /** Prompt positions one prefill pass may take: a window bounded by the logits, or all of them on 'two-pass' graphs. */
  private prefillWindow(): number {
    return this.parts.decoder.passMode === 'two-pass' ? Infinity : Math.max(1, Math.floor(this.parts.maxLogits / this.parts.vocabSize));
  }

  /** 'two-pass' graphs cannot split a sequence over passes, so one row's logits must fit the bound. */
  private checkOnePass(positions: number, argument: string): void {
    if (this.parts.decoder.passMode !== 'two-pass' || positions * this.parts.vocabSize <= this.parts.maxLogits) return;
    throw new InvalidInputError(
      argument,
      `needs ${positions} positions of logits in one pass (this graph only runs the two passes transformers.js runs), ` +
        `more than the ${Math.floor(this.parts.maxLogits / this.parts.vocabSize)} that fit; use a shorter prompt or completion.`,
    );
  }

  /** Runtime failures become typed errors; webgrpo's own errors pass through. */
  private async guard<T>(task: () => Promise<T>): Promise<T> {
    try {
      return await task();
    } catch (error) {
      if (error instanceof WebgrpoError) throw error;
      throw new WebgrpoError('Generation', `The ONNX decoder failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }
}

function checkTopLogprobs(k: number | undefined): number {
  if (k === undefined) return 0;
  if (!(Number.isInteger(k) && k >= 0 && k <= MAX_TOP_LOGPROBS)) throw new InvalidInputError('topLogprobs', `must be an integer from 0 to ${MAX_TOP_LOGPROBS}, got ${k}.`);
  return k;
}

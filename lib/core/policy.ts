/**
 * The `Policy` interface: the one seam between the GRPO loops and whatever produces text
 * (a local ONNX model, an OpenAI-compatible endpoint, a worker, a recording for tests).
 * Plain data in and out; no framework types. It sits at the bottom with the other shared data
 * (lib/core), so every layer can name a policy without importing a backend.
 */

/** A JSON Schema document (the subset `compileResponseFormat` in lib/constrain documents), or `true` for any value. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

export type ResponseFormat =
  | { type: 'json_schema'; schema: JsonSchema }
  | { type: 'json_object' }
  /** The whole output matches `pattern` (see lib/constrain/regex.ts for the subset). */
  | { type: 'regex'; pattern: string };

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** Exactly one of `prompt` (raw text, no template) or `messages` (rendered with the chat template). */
export interface PromptInput {
  prompt?: string;
  messages?: ChatMessage[];
}

export interface SamplingOptions {
  /** Softmax temperature; 0 means greedy. Default 1. */
  temperature?: number;
  /** Keep the k most likely tokens; 0 (the default) disables top-k. */
  topK?: number;
  /** Nucleus sampling mass; 1 (the default) disables it. */
  topP?: number;
  /** Drop tokens below minP x the top token's probability; 0 (the default) disables it. */
  minP?: number;
  /** Seed for the sampler; the same seed, model and backend give the same group. */
  seed?: number;
  /** Stop strings: a row ends when its text contains one; the stop string is not returned. */
  stop?: string[];
}

export type FinishReason = 'eos' | 'length' | 'stop' | 'abort';

export interface Completion {
  text: string;
  /** Sampled token ids; empty where the backend does not report them (most hosted APIs). */
  tokenIds: number[];
  /**
   * log p(token t) under the model's temperature-scaled distribution (TRL's definition); empty
   * where the backend does not report log-probs.
   */
  logprobs: number[];
  /** log p(token t) under the processed (top-k/top-p/min-p filtered) distribution sampled from. */
  sampledLogprobs?: number[];
  finishReason: FinishReason;
  /**
   * Per token, the most likely alternatives under the same distribution as `logprobs`, most likely
   * first; present when `topLogprobs` was asked for and the backend can report them.
   */
  topLogprobs?: TopLogprob[][];
}

export interface TopLogprob {
  tokenId: number;
  logprob: number;
}

export interface Usage {
  promptTokens: number;
  completionTokens: number;
}

export interface GroupResult {
  promptTokenIds: number[];
  completions: Completion[];
  usage: Usage;
}

export interface TokenEvent {
  /** Row of the group (0..groupSize-1). */
  row: number;
  tokenId: number;
  logprob: number;
  /** The most likely alternatives, as in `Completion.topLogprobs`, when `topLogprobs` was asked for. */
  topLogprobs?: TopLogprob[];
}

export interface GenerateGroupOptions extends PromptInput, SamplingOptions {
  groupSize: number;
  maxNewTokens: number;
  signal?: AbortSignal;
  onToken?: (event: TokenEvent) => void;
  /** How many most likely alternatives to report per token (`Completion.topLogprobs`), at most 20; 0 or absent: none. */
  topLogprobs?: number;
  /**
   * Constrain every completion to a format (a JSON Schema, any JSON object, a regular expression);
   * honoured where `info.responseFormats` is true. `sampledLogprobs` are then under the masked
   * distribution, `logprobs` stay the unconstrained ones.
   */
  responseFormat?: ResponseFormat;
}

export interface ScoreOptions extends PromptInput {
  /** Completion token ids to score, one array per completion. */
  completions: number[][];
  temperature?: number;
  /** How many most likely alternatives to report per scored token (`ScoreResult.topLogprobs`), at most 20; 0 or absent: none. */
  topLogprobs?: number;
  signal?: AbortSignal;
}

export interface ScoreResult {
  /** Per completion, per token: log p(token) under the temperature-scaled distribution. */
  logprobs: number[][];
  /** Per completion, per token: entropy of the temperature-scaled distribution. */
  entropies: number[][];
  /** Per completion, per token: the most likely alternatives, as in `Completion.topLogprobs`, when asked for. */
  topLogprobs?: TopLogprob[][][];
}

export interface PolicyInfo {
  /** Model id or path. */
  model: string;
  /** Where it runs: 'webgpu' | 'wasm' | 'cpu' | 'http' | 'worker' | 'recorded' ... */
  backend: string;
  /** Why a backend was chosen over another (for example a missing WebGPU adapter). */
  note?: string;
  /**
   * Local models: which decoder passes the graph supports. 'incremental': any (long prompts prefill
   * in windows, completions are scored on the prompt's cache); 'two-pass': only the two that
   * transformers.js runs, a prefill from an empty cache and one token on a cache (prompts prefill in
   * one pass, completions are scored from an empty cache over prompt + completion).
   */
  passMode?: 'incremental' | 'two-pass';
  /**
   * Local models: 'padded' when rows of different lengths decode in one batch (generateGroups,
   * concurrent calls); 'equal-length' when the graph gets padded rows wrong, so a group joins a
   * running batch only when its prompt is as long as the batch's rows.
   */
  batchMode?: 'padded' | 'equal-length';
  /** Whether `generateGroup` honours `responseFormat` (constrained decoding, or a server's structured output). */
  responseFormats?: boolean;
  /**
   * Local models: the longest prompt plus completion, in tokens (the model's position limit);
   * absent where unknown. Callers with long prompts (the lessons critic) cut them to fit.
   */
  maxPositions?: number;
  /** Local models in a browser: the WebAssembly threads onnxruntime-web runs. */
  threads?: number;
  /** Why `threads` is 1, when it is (the page is not cross-origin isolated, ...). */
  threadsNote?: string;
}

export interface Policy {
  readonly info: PolicyInfo;
  generateGroup(options: GenerateGroupOptions): Promise<GroupResult>;
  /**
   * Several groups decoded together, each the same as when sampled alone; absent where the backend
   * has no batching (call `generateGroups(policy, requests)`, which falls back to one at a time).
   */
  generateGroups?(requests: GenerateGroupOptions[]): Promise<GroupResult[]>;
  /** Log-probs of given completions; absent where the backend cannot score (most hosted APIs). */
  scoreCompletions?(options: ScoreOptions): Promise<ScoreResult>;
  /** Token ids of a text, as the policy's tokenizer sees it; absent where unknown. */
  encode?(text: string): Promise<number[]>;
  /**
   * Text of token ids as the policy's tokenizer writes it; special tokens (EOS, chat markers) are
   * skipped unless `skipSpecialTokens` is false. Absent where unknown.
   */
  decode?(tokenIds: number[], options?: { skipSpecialTokens?: boolean }): Promise<string>;
  /**
   * The text the model reads for a prompt, special tokens included: messages through the chat
   * template with the generation prompt, a plain prompt as it is. Absent where unknown.
   */
  renderPrompt?(input: PromptInput): Promise<string>;
  dispose(): Promise<void>;
}

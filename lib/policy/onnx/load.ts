/**
 * `loadOnnxPolicy`: any transformers.js-compatible decoder (the bundled tiny model, SmolLM2,
 * Qwen2.5, Llama 3.2 from the hub) as a `Policy`. transformers.js provides the tokenizer, the
 * config, the chat template, the file fetching and caching, and creates the onnxruntime session;
 * webgrpo drives that session itself (see group.ts and score.ts).
 */
import { AbortError, InvalidInputError, ModelLoadError } from '../../errors.js';
import { Decoder } from './decoder.js';
import { chooseDevice, type Backend, type OnnxDevice } from './device.js';
import { GpuKv, HostKv, type KvLayout, type KvOps } from './kv-cache.js';
import { rebuildWithHiddenState } from './hidden-session.js';
import { graphAccess } from './model-graph.js';
import { resolveModelLocation, type ModelHost, type ModelLocation } from './location.js';
import { HostLogits, type LogitsOps } from './logits-ops.js';
import { probePadding, probePasses } from './passes.js';
import { OnnxPolicy, type OnnxTokenizer } from './policy.js';
import { withSessionsFromViews } from './session-from-views.js';
import { remember, samplerSessionOptions } from './session-options.js';
import { tokenBytesTable } from './token-table.js';
import { tokenVocabulary } from '../../constrain/vocabulary.js';
import type { OrtSession, OrtTensorClass } from './ort-types.js';
import { loadRuntime, type Runtime, type Transformers } from './runtime.js';
import { checkWasmFiles, configureWasm, wasmLoadFailure, type WasmPaths, type WasmSetup } from './wasm-runtime.js';
import { WebGpuLogits } from './webgpu-sampler.js';
import type { GpuDeviceLike } from './webgpu-types.js';

/** Weight formats transformers.js knows (files `onnx/model{_suffix}.onnx`). */
export type OnnxDtype = 'auto' | 'fp32' | 'fp16' | 'q8' | 'int8' | 'uint8' | 'q4' | 'bnb4' | 'q4f16';

export interface OnnxLoadProgress {
  /** 'download' while files are fetched or read, 'ready' once the policy can generate. */
  status: 'download' | 'ready';
  /** The file the event is about, when it is about one. */
  file?: string;
  /** Bytes loaded and expected over all files seen so far (total 0 while unknown). */
  loaded: number;
  total: number;
}

export interface OnnxPolicyOptions {
  /** A model folder (Node), a same-origin URL or path (browsers), or a Hugging Face hub id. */
  model: string | URL;
  /** 'auto' (default): WebGPU when the browser has an adapter, else WASM; Node always uses the CPU. */
  device?: OnnxDevice;
  /** Which weight file to load; default: the model config's choice, else transformers.js' default for the device. */
  dtype?: OnnxDtype;
  onProgress?: (event: OnnxLoadProgress) => void;
  signal?: AbortSignal;
  /**
   * Browsers: the folder (URL) where onnxruntime-web's `dist/` files are served
   * (`ort-wasm-simd-threaded.wasm` and `.mjs`, and the `.asyncify` pair for WebGPU): the policy then
   * loads the smallest build for its backend and can run threads. `{ mjs, wasm }` names the two
   * files of one build instead. Without it onnxruntime-web's bundled glue finds its WebGPU build's
   * `.wasm` next to its own module, which Vite and webpack emit as an asset, on one thread.
   */
  wasmPaths?: WasmPaths;
  /**
   * Browsers: WebAssembly threads. Default: every core (at most 16) where the page is cross-origin
   * isolated and `wasmPaths` is given, else 1. Settled by the first model loaded in a page or
   * worker; `policy.info.threads` says how many run.
   */
  threads?: number;
  /**
   * Also output the final hidden state (the LM head's input), which a trainable adapter on the
   * head needs (`webgrpo/grad`). The graph is rewritten once at load and its session built again,
   * so loading takes about twice as long; memory does not double. Default false.
   */
  hiddenState?: boolean;
  /**
   * Most rows decoding at once when groups are batched (generateGroups, or generateGroup calls
   * made while another runs, as a server's concurrent requests); a group that does not fit waits
   * until rows finish. Default 256.
   */
  maxBatchRows?: number;
  /**
   * onnxruntime session options for the sampler's session (onnxruntime's `InferenceSession.SessionOptions`,
   * passed as transformers.js' `session_options`), over webgrpo's defaults, which they win over:
   * in Node, onnxruntime's intra-op threads block between ops instead of spinning
   * (`extra: { 'session.intra_op.allow_spinning': '0' }`; give `'1'` for onnxruntime's own default).
   */
  sessionOptions?: Record<string, unknown>;
}

/** Logits elements one forward pass may produce; longer prompts and scoring batches run in windows. */
const MAX_LOGITS = 1 << 25;

/** `loadOnnxPolicy` on one platform's files (host-node.ts, host-browser.ts); the entries pick it. */
export async function loadOnnxPolicyOn(host: ModelHost, options: OnnxPolicyOptions): Promise<OnnxPolicy> {
  if (!options || typeof options !== 'object') throw new ModelLoadError('loadOnnxPolicy needs options: { model }.');
  const { signal } = options;
  const checkAbort = () => {
    if (signal?.aborted) throw new AbortError('Loading the model was aborted.', { cause: signal.reason });
  };
  checkAbort();
  const { maxBatchRows } = options;
  if (maxBatchRows !== undefined && !(Number.isInteger(maxBatchRows) && maxBatchRows >= 1)) {
    throw new InvalidInputError('maxBatchRows', `must be a positive integer, got ${maxBatchRows}.`);
  }
  const runtime = await loadRuntime();
  const choice = await chooseDevice(options.device ?? 'auto', host.isNode);
  const location = await resolveModelLocation(options.model, host);
  const { env } = runtime.transformers;
  if (location.local) env.allowLocalModels = true;
  const wasm = host.isNode ? undefined : configureWasm(env.backends.onnx, choice.backend, options.wasmPaths, options.threads);
  await checkWasmFiles(wasm);
  checkAbort();

  const progress = trackProgress(options.onProgress);
  // Without a listener, transformers.js skips its progress bookkeeping altogether.
  const shared = { local_files_only: location.local, progress_callback: options.onProgress ? progress : undefined };
  const sessionOptions = samplerSessionOptions(host.isNode, options.sessionOptions);
  const fromPretrained = () => runtime.transformers.AutoModelForCausalLM.from_pretrained(location.id, { ...shared, device: choice.backend, dtype: options.dtype, session_options: sessionOptions });
  // transformers.js is kept from holding a whole model file itself: Node's onnxruntime reads the
  // graph from its path, a page's file is streamed by webgrpo (ModelHost.loadingModel).
  const loadModel = () => (host.loadingModel ? host.loadingModel(env, location, fromPretrained, options.onProgress ? progress.streamed : undefined) : fromPretrained());
  // In a page the session is made from the weights as external data (session-from-views.ts): the
  // WebAssembly heap, which never shrinks, then holds the weights once rather than the file, its
  // parsed copy and the weights together. The model file is streamed by webgrpo, not downloaded
  // whole by transformers.js (streamed-model.ts), so its bytes are freed once the session is made.
  // Node's onnxruntime reads the file's path instead.
  const sessions = host.isNode ? undefined : ((await import('onnxruntime-web/webgpu')) as unknown as { InferenceSession: Parameters<typeof withSessionsFromViews>[0] }).InferenceSession;
  const [tokenizerResult, modelResult] = await Promise.allSettled([
    runtime.transformers.AutoTokenizer.from_pretrained(location.id, shared),
    sessions ? withSessionsFromViews(sessions, loadModel) : loadModel(),
  ]);
  if (tokenizerResult.status === 'rejected' || modelResult.status === 'rejected') {
    if (modelResult.status === 'fulfilled') await modelResult.value.dispose();
    const cause = tokenizerResult.status === 'rejected' ? tokenizerResult.reason : (modelResult as PromiseRejectedResult).reason;
    const runtimeFiles = host.isNode ? undefined : wasmLoadFailure(cause, wasm);
    if (runtimeFiles) throw runtimeFiles;
    throw new ModelLoadError(
      `Could not load the model from ${location.id}: ${cause instanceof Error ? cause.message : String(cause)}. ` +
        'A model folder needs config.json, tokenizer.json, tokenizer_config.json and onnx/model.onnx ' +
        '(or onnx/model_<dtype>.onnx for another dtype). The bundled models ship in the package: ' +
        'bundledModelPath() / skillModelPath() in Node; a site serves node_modules/webgrpo/public/models/ at /models/.',
      { cause },
    );
  }
  const model = modelResult.value;
  for (const session of Object.values(model.sessions)) remember(session, sessionOptions);
  const tokenizer = tokenizerResult.value as unknown as OnnxTokenizer & { eos_token_id?: number };
  try {
    checkAbort();
    const policy = await assemble(runtime, host, choice.backend, choice.note, wasm, location, model, tokenizer, options.hiddenState === true, maxBatchRows);
    options.onProgress?.({ status: 'ready', ...progress.totals() });
    return policy;
  } catch (error) {
    // The hidden-state rebuild may have released the session already; the load's own error matters.
    await model.dispose().catch(() => undefined);
    throw error;
  }
}

type LoadedModel = Awaited<ReturnType<Transformers['AutoModelForCausalLM']['from_pretrained']>>;

async function assemble(
  runtime: Runtime,
  host: ModelHost,
  backend: Backend,
  note: string | undefined,
  wasm: WasmSetup | undefined,
  location: ModelLocation,
  model: LoadedModel,
  tokenizer: OnnxTokenizer & { eos_token_id?: number },
  withHidden: boolean,
  maxBatchRows: number | undefined,
): Promise<OnnxPolicy> {
  const label = location.id;
  const config = model.config as unknown as Record<string, unknown>;
  const sessionName = model.sessions.model ? 'model' : 'decoder_model_merged';
  const loaded = model.sessions[sessionName] as OrtSession | undefined;
  if (!loaded) throw new ModelLoadError(`${label} has no decoder session; webgrpo needs a causal language model.`);
  let session = loaded;
  let hidden: string | undefined;
  if (withHidden) {
    if (!(Number(config.hidden_size) > 0)) throw new ModelLoadError(`${label}: config.json states no hidden_size, which an adapter on the head needs.`);
    ({ session, hidden } = await rebuildWithHiddenState(runtime.transformers, location, model.config, backend, session, host));
    // The model object owns its sessions: disposing it releases the rebuilt one.
    model.sessions[sessionName] = session as never;
  }
  const layout = kvLayout(session, config, label);
  const vocabSize = vocabSizeOf(session, config, label);
  const eosIds = eosIdsOf(model, config, tokenizer);
  const { kv, logits, device } = await stateOps(runtime, backend, session, layout, vocabSize);
  const maxLogits = logits instanceof WebGpuLogits ? Math.min(MAX_LOGITS, logits.maxElements()) : MAX_LOGITS;
  const maxPositions = Number(config.max_position_embeddings) || Infinity;
  const probe = new Decoder(session, runtime.Tensor, kv, new HostLogits(vocabSize));
  // On WebGPU a failed run breaks the session for good, so passes that may fail are not tried there.
  const tryFailing = backend !== 'webgpu';
  const passMode = await probePasses(probe, label, tryFailing);
  const batchMode = await probePadding(probe, tryFailing);
  const decoder = new Decoder(session, runtime.Tensor, kv, logits, hidden);
  decoder.passMode = passMode;
  // Whether the decoder's session was released (releaseSession) and not replaced since.
  let released = false;
  const graph = graphAccess({ transformers: runtime.transformers, location, modelConfig: model.config, backend, host, loaded, current: () => decoder.current, hidden });
  return new OnnxPolicy({
    info: { model: label, backend, note, passMode, batchMode, ...(wasm ? { threads: wasm.threads, ...(wasm.reason ? { threadsNote: wasm.reason } : {}) } : {}) },
    tokenizer,
    decoder,
    vocabSize,
    eosIds,
    maxPositions,
    maxLogits,
    maxBatchRows,
    batchMode,
    // transformers.js keeps the parsed tokenizer.json; it is the only place the token strings are.
    // A model whose generation config names no end token still needs one to close an output: the
    // tokenizer's (the row then repeats it, skipped in the text, until maxNewTokens).
    vocabulary: () =>
      tokenVocabulary(
        tokenBytesTable((tokenizer as { _tokenizerJSON?: unknown })._tokenizerJSON, vocabSize),
        eosIds.size > 0 ? [...eosIds] : [tokenizer.eos_token_id].filter((id): id is number => Number.isInteger(id)),
      ),
    ...(hidden !== undefined ? { hiddenSize: Number(config.hidden_size) } : {}),
    ...(device ? { device } : {}),
    graph,
    replaceSession: async (next) => {
      const old = decoder.replaceSession(next);
      // The model object owns its sessions: disposing it releases the current one.
      model.sessions[sessionName] = next as never;
      // A session released already (releaseSession) is not released twice.
      if (released) released = false;
      else await (old as OrtSession & { release(): Promise<void> }).release();
    },
    releaseSession: async () => {
      if (released) return;
      // Out of the model object first: disposing it must not release this session again.
      delete model.sessions[sessionName];
      released = true;
      await (decoder.current as OrtSession & { release(): Promise<void> }).release();
    },
    release: async () => {
      await model.dispose();
    },
  });
}

/** The logits' own last dimension when the graph states it (some exports pad the vocabulary), else config.json's vocab_size. */
function vocabSizeOf(session: OrtSession, config: Record<string, unknown>, label: string): number {
  const logitsDim = session.outputMetadata?.find((m) => m.name === 'logits')?.shape?.[2];
  const vocabSize = typeof logitsDim === 'number' ? logitsDim : Number(config.vocab_size);
  if (!session.inputNames.includes('input_ids') || !session.outputNames.includes('logits') || !(vocabSize > 0)) {
    throw new ModelLoadError(`${label} is not a decoder with input_ids -> logits and a vocab_size in config.json.`);
  }
  return vocabSize;
}

/** The tokens that end an output: the generation config's, else config.json's, else the tokenizer's. */
function eosIdsOf(model: LoadedModel, config: Record<string, unknown>, tokenizer: { eos_token_id?: number }): Set<number> {
  const generation = (model as unknown as { generation_config?: Record<string, unknown> | null }).generation_config;
  const eos = generation?.eos_token_id ?? config.eos_token_id ?? tokenizer.eos_token_id;
  return new Set((Array.isArray(eos) ? eos : [eos]).filter((id): id is number => Number.isInteger(id)));
}

/** Where the key/value cache and the logits live: GPU buffers on onnxruntime-web's WebGPU device (after a warm-up run), else host memory. */
async function stateOps(runtime: Runtime, backend: Backend, session: OrtSession, layout: ReturnType<typeof kvLayout>, vocabSize: number): Promise<{ kv: KvOps; logits: LogitsOps; device?: GpuDeviceLike }> {
  if (backend !== 'webgpu') return { logits: new HostLogits(vocabSize), kv: new HostKv(runtime.Tensor, layout) };
  const onnxEnv = runtime.transformers.env.backends.onnx as { webgpu?: { device?: Promise<GpuDeviceLike> } };
  const device = await onnxEnv.webgpu?.device;
  if (!device) throw new ModelLoadError('onnxruntime-web created no WebGPU device.');
  const kv = new GpuKv(runtime.Tensor, layout, device);
  const probe = await warmUp(session, runtime, kv, vocabSize);
  const logits = await WebGpuLogits.create(device, probe.Tensor, vocabSize, probe.logitsType === 'float16' ? 'float16' : 'float32');
  return { kv, logits, device };
}

/**
 * One token through the session before the first request. It compiles the WebGPU kernels, and it
 * yields onnxruntime-web's own Tensor class: onnxruntime-web accepts a pre-allocated output only if
 * it is `instanceof` that class, while transformers.js makes its tensors from its own copy of
 * onnxruntime-common. It also tells the logits' element type.
 */
async function warmUp(session: OrtSession, runtime: Runtime, kv: KvOps, vocabSize: number): Promise<{ Tensor: OrtTensorClass; logitsType: string }> {
  const probe = new Decoder(session, runtime.Tensor, kv, new HostLogits(vocabSize));
  const past = kv.empty(1);
  const { logits, kv: present } = await probe.forward([0], 1, 1, past, true);
  const result = { Tensor: logits.constructor as unknown as OrtTensorClass, logitsType: logits.type };
  logits.dispose();
  kv.dispose(present);
  return result;
}

/** Past inputs, their present outputs, and the cache's element type and static dims. */
function kvLayout(session: OrtSession, config: Record<string, unknown>, label: string): KvLayout {
  const pastNames = session.inputNames.filter((name) => name.startsWith('past_key_values.'));
  const presentNames = pastNames.map((name) => name.replace('past_key_values.', 'present.'));
  const missing = presentNames.filter((name) => !session.outputNames.includes(name));
  if (pastNames.length === 0 || missing.length > 0) {
    throw new ModelLoadError(`${label} has no key/value cache I/O (past_key_values.* -> present.*); export it with past (Optimum's text-generation-with-past).`);
  }
  const meta = session.inputMetadata.find((m) => m.name === pastNames[0]);
  const shape = meta?.shape ?? [];
  const heads = Number(config.num_attention_heads);
  const kvHeads = typeof shape[1] === 'number' ? shape[1] : Number(config.num_key_value_heads ?? heads);
  const headDim = typeof shape[3] === 'number' ? shape[3] : Number(config.head_dim ?? Number(config.hidden_size) / heads);
  if (!(kvHeads > 0 && headDim > 0)) throw new ModelLoadError(`${label}: cannot tell the key/value cache shape from the model or its config.`);
  return { pastNames, presentNames, dtype: meta?.type === 'float16' ? 'float16' : 'float32', kvHeads, headDim };
}

interface ProgressCallback {
  (info: { status?: string; file?: string; loaded?: number; total?: number }): void;
  totals(): { loaded: number; total: number };
  /** A file streamed by webgrpo (streamed-model.ts): transformers.js' own events for it count only the graph it was given. */
  streamed(file: string, loaded: number, total: number): void;
}

function trackProgress(onProgress: OnnxPolicyOptions['onProgress']): ProgressCallback {
  const files = new Map<string, { loaded: number; total: number }>();
  const totals = () => {
    let loaded = 0;
    let total = 0;
    for (const file of files.values()) {
      loaded += file.loaded;
      total += file.total;
    }
    return { loaded, total };
  };
  const streamed = new Set<string>();
  const report = (file: string, loaded: number, total: number) => {
    files.set(file, { loaded, total });
    onProgress?.({ status: 'download', file, ...totals() });
  };
  const callback = ((info) => {
    if (info.status !== 'progress' || !info.file || streamed.has(info.file)) return;
    report(info.file, info.loaded ?? 0, info.total ?? 0);
  }) as ProgressCallback;
  callback.totals = totals;
  callback.streamed = (file, loaded, total) => {
    streamed.add(file);
    report(file, loaded, total);
  };
  return callback;
}

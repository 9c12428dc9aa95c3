/**
 * The models the playground offers and how each becomes a `Policy`. ONNX models (the bundled tiny
 * one, hub models) load in a Web Worker through `createWorkerPolicy`, so transformers.js and
 * onnxruntime-web are fetched only when a model is chosen and every forward pass runs off the
 * page's thread. An OpenAI-compatible endpoint is plain `fetch`, so it runs on the page; its key
 * lives in that policy's closure only.
 */
import { AbortError, createWorkerPolicy, type Policy } from '../../lib/index.js';
import type { OnnxDevice, OnnxDtype, OnnxLoadProgress } from '../../lib/onnx.js';

export interface OnnxModel {
  id: string;
  label: string;
  /** A same-origin path (bundled) or a Hugging Face hub id. */
  source: 'bundled' | 'hub';
  /** Hub id for `source: 'hub'`. */
  hubId?: string;
  /** The folder under the site's models/ for `source: 'bundled'`. */
  folder?: string;
  detail: string;
  /** Pretrained on the skill tasks (webgrpo-skill and the models continued from it for them): methods offer them their skill settings. */
  skillTasks?: true;
}

/** The first is the playground's default: the model whose first run shows GRPO teaching it something. */
export const ONNX_MODELS: readonly OnnxModel[] = [
  {
    id: 'sorter',
    label: 'webgrpo-sorter (bundled, offline)',
    source: 'bundled',
    folder: 'webgrpo-sorter',
    skillTasks: true,
    detail: 'webgrpo-skill pretrained further until it mostly copies the words it is asked to sort: GRPO teaches it to sort them.',
  },
  {
    id: 'skill',
    label: 'webgrpo-skill (bundled, offline)',
    source: 'bundled',
    folder: 'webgrpo-skill',
    skillTasks: true,
    detail: 'A 0.42M-parameter model webgrpo pretrained to a partial skill at the four tasks below: GRPO can make it better.',
  },
  {
    id: 'reader',
    label: 'webgrpo-reader (bundled, offline)',
    source: 'bundled',
    folder: 'webgrpo-reader',
    detail:
      'webgrpo-skill taught to read worked examples in its prompt: the model for Training-Free exemplars on named-format, where the library carries a rule the prompt never shows. Shown the worked example closest to each prompt it writes that code’s format: held-out greedy exact match rises from 0% to 62–100% under six seed pairs; its own lessons have the right form but the wrong rule. 1.7 MB, downloaded only when picked.',
  },
  {
    id: 'tiny',
    label: 'webgrpo-tiny (bundled, offline)',
    source: 'bundled',
    folder: 'webgrpo-tiny',
    detail: 'A 0.8M-parameter model with random weights that ships with the site: it shows every mechanic offline, but writes gibberish.',
  },
  {
    id: 'smollm2-135m',
    label: 'SmolLM2-135M-Instruct',
    source: 'hub',
    hubId: 'HuggingFaceTB/SmolLM2-135M-Instruct',
    detail: 'Downloaded once from the Hugging Face hub (4-bit), then cached by the browser. Follows simple instructions.',
  },
  {
    id: 'smollm2-360m',
    label: 'SmolLM2-360M-Instruct',
    source: 'hub',
    hubId: 'HuggingFaceTB/SmolLM2-360M-Instruct',
    detail: 'Downloaded once from the Hugging Face hub (4-bit), then cached. Noticeably better than 135M.',
  },
  {
    id: 'qwen2.5-0.5b',
    label: 'Qwen2.5-0.5B-Instruct',
    source: 'hub',
    hubId: 'onnx-community/Qwen2.5-0.5B-Instruct',
    detail: 'Downloaded once from the Hugging Face hub (4-bit), then cached. The smallest model here that can write lessons as a critic.',
  },
];

export const ENDPOINT_ID = 'endpoint';

/** Whether the model of `id` (models.ts) was pretrained on the skill tasks, so methods offer it their skill tasks and settings. */
export function knowsSkillTasks(id: string): boolean {
  return ONNX_MODELS.find((m) => m.id === id)?.skillTasks === true;
}

/**
 * The offered ONNX model a stored run used (its config's model: a bundled folder's path or a hub
 * id), or undefined. Each of them ships a chat template: messages are sent through it, a plain
 * prompt is read as raw text (lib/policy/onnx/prompt.ts).
 */
export function onnxModelOf(model: string): OnnxModel | undefined {
  const path = (p: string) => p.replace(/\/+$/, '');
  return ONNX_MODELS.find((m) => (m.source === 'bundled' ? path(bundledModelPath(m.folder as string)) === path(model) : m.hubId === model));
}

export interface EndpointSettings {
  baseURL: string;
  model: string;
  /** In memory only: never stored, never exported. */
  apiKey: string;
}

/** A bundled model's path on this site (absolute, since the worker resolves against its own URL). */
export function bundledModelPath(folder: string, base: string = document.baseURI): string {
  return new URL(`./models/${folder}/`, base).pathname;
}

export interface OnnxInit {
  model: string;
  device: OnnxDevice;
  /** Where the site serves onnxruntime-web's files (vite.config.ts), so WebAssembly can run threads. */
  wasmPaths: string;
  dtype?: OnnxDtype;
  /** For gradient runs: the graph also returns the final hidden state, and the policy gets a trainable head. */
  hiddenState?: boolean;
}

/** A device the model is loaded on: Auto is resolved before loading (model-slot.svelte.ts). */
export type LoadDevice = Exclude<OnnxDevice, 'auto' | 'cpu'>;

/** What `loadOnnxPolicy` gets for a catalog model. 4-bit weights with fp16 math on WebGPU, 4-bit on WASM. */
export function onnxInit(model: OnnxModel, device: LoadDevice, trainable = false): OnnxInit {
  const extra = { wasmPaths: new URL('./ort/', document.baseURI).href, ...(trainable ? { hiddenState: true } : {}) };
  if (model.source === 'bundled') return { model: bundledModelPath(model.folder as string), device, ...extra };
  return { model: model.hubId as string, device, dtype: device === 'webgpu' ? 'q4f16' : 'q4', ...extra };
}

export interface LoadProgress {
  loaded: number;
  total: number;
  file?: string;
}

/** A model loaded in its worker; gradient runs are started in that worker (gradient-client.ts). */
export interface WorkerModel {
  policy: Policy;
  worker: Worker;
}

export async function loadOnnxModel(
  model: OnnxModel,
  options: { device: LoadDevice; trainable: boolean; onProgress: (progress: LoadProgress) => void; signal?: AbortSignal },
): Promise<WorkerModel> {
  const { device, trainable, onProgress, signal } = options;
  const worker = new Worker(new URL('../policy.worker.ts', import.meta.url), { type: 'module', name: `webgrpo ${model.id}` });
  // Cancelling ends the worker, and with it any download in flight.
  const cancelled = new Promise<never>((_, reject) => {
    signal?.addEventListener(
      'abort',
      () => {
        worker.terminate();
        reject(new AbortError(`Loading ${model.label} was cancelled.`));
      },
      { once: true },
    );
  });
  try {
    const loading = createWorkerPolicy(worker, {
      init: onnxInit(model, device, trainable),
      onProgress: (p) => {
        const { loaded, total, file } = p as OnnxLoadProgress;
        onProgress({ loaded, total, ...(file ? { file } : {}) });
      },
    });
    return { policy: await Promise.race([loading, cancelled]), worker };
  } catch (error) {
    if (error instanceof AbortError) throw error;
    worker.terminate();
    throw new Error(explainLoadFailure(model, error));
  }
}

/** An endpoint's policy, once something answers at its URL (so a closed port is not "Ready"). */
export async function loadEndpoint(settings: EndpointSettings, probe: typeof fetch = fetch): Promise<Policy> {
  const baseURL = settings.baseURL.trim();
  await probeEndpoint(baseURL, settings.apiKey, probe);
  const { openAiPolicy } = await import('../../lib/openai.js');
  return openAiPolicy({ baseURL, model: settings.model.trim(), ...(settings.apiKey ? { apiKey: settings.apiKey } : {}) });
}

/**
 * Asks the endpoint for its models. Any HTTP answer but a refused key means a server is there (some
 * have no /models); no answer at all is an error that says what to check.
 */
async function probeEndpoint(baseURL: string, apiKey: string, probe: typeof fetch): Promise<void> {
  let response: Response;
  try {
    response = await probe(`${baseURL.replace(/\/+$/, '')}/models`, {
      headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
  } catch {
    throw new Error(`Nothing answered at ${baseURL}: check the URL, that the server is running, and that it allows requests from this page (CORS).`);
  }
  if (response.status === 401 || response.status === 403) throw new Error(`The endpoint at ${baseURL} refused the API key (HTTP ${response.status}).`);
}

/**
 * Whether transformers.js has a hub model in the browser's Cache Storage (it keys files by their
 * hub URL), so it can load offline. Only the config is checked; a partial download fails later
 * with its own message.
 */
export async function hubModelCached(model: OnnxModel): Promise<boolean> {
  if (model.source !== 'hub' || typeof caches === 'undefined') return false;
  try {
    const cache = await caches.open('transformers-cache');
    return (await cache.match(`https://huggingface.co/${model.hubId}/resolve/main/config.json`)) !== undefined;
  } catch {
    return false;
  }
}

/** A load failure in words a newcomer can act on; offline hub loads say so plainly. */
export function explainLoadFailure(model: OnnxModel, error: unknown, online: boolean = navigator.onLine): string {
  const message = error instanceof Error ? error.message : String(error);
  if (model.source === 'hub' && (!online || /fetch|network|Failed to/i.test(message))) {
    return (
      `${model.label} could not be downloaded from the Hugging Face hub` +
      (online ? '' : ': this browser is offline') +
      '. Hub models need the network the first time (later they load from the browser cache). ' +
      'The bundled webgrpo-tiny model always works offline.'
    );
  }
  return `${model.label} could not be loaded: ${message}`;
}

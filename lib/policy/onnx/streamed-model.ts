/**
 * A page's model file streamed once by webgrpo, so that the page never holds transformers.js'
 * download of it. Left to itself, transformers.js reads the whole file into one buffer and hands
 * it to onnxruntime-web; that buffer (769 MB at Qwen2.5-0.5B's shape in q4) is garbage once the
 * session is made, but stays resident until the garbage collector next runs a major collection,
 * which in the scale-tab bench came in the middle of sampling, at the tab's peak. A buffer made by
 * fetch cannot be freed earlier: the browser keeps a reference of its own to its memory.
 *
 * Here, while transformers.js loads a model, its file cache (`env.customCache`, the hook its
 * `from_pretrained` looks in before it downloads a file) answers for the model's `.onnx` files:
 * the file is streamed once, its graph walked as it passes (inline-data.ts) and each large inline
 * weight copied into an array of its own; transformers.js gets the graph without them (a cache
 * hit, so it stores nothing), and session-from-views.ts hands onnxruntime-web the arrays as the
 * graph's external data. Once the sessions are made the arrays are detached, which frees their
 * memory at once: arrays made by a script have no other owner. Every other request goes to the
 * cache transformers.js would have used (the user's own custom cache, or the browser's Cache
 * API). A file this cannot read (no stated length, not an ONNX protobuf, a graph with external
 * data files of its own) is left to transformers.js, which then downloads it as before.
 */
import { ModelLoadError } from '../../errors.js';
import { externalLocations, readExternalPieces, type ExternalPieces } from './external-data.js';
import { ForwardReader, inlineAsExternal, MIN_EXTERNAL_BYTES } from './inline-data.js';
import { chunks, hubFileUrl, statedLength, type HubEnv, type ModelLocation } from './location.js';
import { detach } from './detach.js';

/** What transformers.js asks of a custom cache (the Web Cache API's match and put). */
interface FileCache {
  match(request: string): Promise<unknown>;
  put(request: string, response: Response, progress?: never): Promise<void>;
  delete?(request: string): Promise<boolean>;
}

/** The settings of transformers.js' `env` that choose where it looks for a file before it downloads it. */
export interface CacheEnv extends HubEnv {
  useCustomCache: boolean;
  customCache: FileCache | null;
  cacheKey: string;
  experimental_useCrossOriginStorage?: boolean;
  useFSCache?: boolean;
  allowRemoteModels?: boolean;
}

/** Bytes of the file streamed so far, and its size. */
export type StreamProgress = (file: string, loaded: number, total: number) => void;

/** One load's claim on its model's `.onnx` files. */
interface Claim {
  /** The requests it answers start with this (the model folder's path, or its hub URL). */
  prefix: string;
  local: boolean;
  /** Whether a hub file not in the cache may be downloaded (transformers.js' allowRemoteModels). */
  mayDownload: boolean;
  /** Answered once each: a second ask (transformers.js checking its cache again) goes on to the cache. */
  asked: Set<string>;
  name(file: string): string;
  onProgress: StreamProgress | undefined;
  /** The weights streamed for it, by the name its graph gives them. */
  pieces: Map<string, Uint8Array>;
}

const claims = new Set<Claim>();
let loads = 0;
let depth = 0;
let saved: Pick<CacheEnv, 'useCustomCache' | 'customCache'> | undefined;

/**
 * Runs `fn` (transformers.js' from_pretrained of the model at `location`, in a page) with the
 * model's `.onnx` files streamed as described above. Calls may nest or overlap: `env`'s cache
 * settings are restored when the last one ends.
 */
export async function withStreamedModel<T>(env: CacheEnv, location: ModelLocation, fn: () => Promise<T>, onProgress?: StreamProgress): Promise<T> {
  // A cache this cannot stand in front of (a file system cache, cross-origin storage, or a custom
  // cache switched on with none given, which transformers.js reports itself): left as it is.
  if (depth === 0 && (env.useCustomCache ? !env.customCache : env.experimental_useCrossOriginStorage || env.useFSCache)) return fn();
  const load = ++loads;
  const claim: Claim = {
    prefix: location.local ? `${location.id}/` : hubFileUrl(env, location.id, ''),
    local: location.local,
    mayDownload: env.allowRemoteModels !== false,
    asked: new Set(),
    // Names no other load's pieces have, so that overlapping loads' sessions find their own.
    name: (file) => `webgrpo-${load}-${file.slice(file.lastIndexOf('/') + 1)}`,
    onProgress,
    pieces: new Map(),
  };
  install(env);
  claims.add(claim);
  try {
    return await fn();
  } finally {
    claims.delete(claim);
    // The sessions copied each weight into their own memory: freed now, not at the next major collection.
    for (const piece of claim.pieces.values()) detach(piece);
    claim.pieces.clear();
    if (--depth === 0) {
      Object.assign(env, saved);
      saved = undefined;
    }
  }
}

/**
 * The external data a graph handed to onnxruntime-web names when every file it names is a piece
 * streamed here (the graph transformers.js was given); undefined for any other model.
 */
export function streamedExternalData(graph: Uint8Array): Array<{ path: string; data: Uint8Array }> | undefined {
  if (claims.size === 0) return undefined;
  let locations: string[];
  try {
    locations = externalLocations(graph);
  } catch {
    return undefined;
  }
  const found = locations.map((path) => {
    for (const claim of claims) {
      const data = claim.pieces.get(path);
      if (data) return { path, data };
    }
    return undefined;
  });
  return found.length > 0 && found.every((f) => f !== undefined) ? (found as Array<{ path: string; data: Uint8Array }>) : undefined;
}

/**
 * One pass over a model file's bytes: the graph with each inline weight of at least
 * MIN_EXTERNAL_BYTES as an external reference, and those weights, each in an array of its own,
 * named `<name>@<offset>` (readExternalPieces' names). A graph that refers to other files keeps
 * data this stream does not have, and is refused.
 */
export async function readStreamed(body: ReadableStream<Uint8Array>, name: string, size: number, onBytes?: (loaded: number) => void): Promise<ExternalPieces> {
  const stream = chunks(body);
  const reader = new ForwardReader(onBytes ? counted(stream, onBytes) : stream);
  const kept = new Map<number, Uint8Array>();
  try {
    const structure = await inlineAsExternal(reader.readAt, name, size, MIN_EXTERNAL_BYTES, (offset, length) => kept.set(offset, reader.keep(offset, length)));
    await reader.rest();
    return await readExternalPieces(structure, async (file, ranges) => {
      if (file !== name) throw new ModelLoadError(`The graph keeps data in ${file}, which transformers.js reads itself.`);
      return ranges.map(({ offset }) => kept.get(offset)!);
    });
  } finally {
    // Cancels the download if the walk stopped early.
    await stream.return(undefined);
  }
}

async function* counted(stream: AsyncGenerator<Uint8Array>, onBytes: (loaded: number) => void): AsyncGenerator<Uint8Array> {
  let loaded = 0;
  for await (const chunk of stream) {
    loaded += chunk.length;
    onBytes(loaded);
    yield chunk;
  }
}

/** Puts the claiming cache in `env` for the first of overlapping loads. */
function install(env: CacheEnv): void {
  if (depth++ > 0) return;
  saved = { useCustomCache: env.useCustomCache, customCache: env.customCache };
  const fallback = lazyFallback(env, saved);
  const cache: FileCache = {
    async match(request) {
      for (const claim of claims) {
        if (!request.startsWith(claim.prefix) || !request.endsWith('.onnx') || claim.asked.has(request)) continue;
        claim.asked.add(request);
        // A failure here is a cache miss to transformers.js: it downloads the file itself.
        return answer(claim, request, fallback);
      }
      return (await fallback())?.match(request);
    },
    async put(request, response, progress) {
      await (await fallback())?.put(request, response, progress);
    },
    async delete(request) {
      return (await (await fallback())?.delete?.(request)) ?? false;
    },
  };
  env.customCache = cache;
  env.useCustomCache = true;
}

/** The cache transformers.js would use without the claim: the user's own, else the browser's (when it has one and may use it). */
function lazyFallback(env: CacheEnv, own: Pick<CacheEnv, 'useCustomCache' | 'customCache'>): () => Promise<FileCache | null> {
  let opened: Promise<FileCache | null> | undefined;
  const browser = (globalThis as { caches?: CacheStorage }).caches;
  return () =>
    (opened ??= own.useCustomCache && own.customCache
      ? Promise.resolve(own.customCache)
      : env.useBrowserCache && browser
        ? browser.open(env.cacheKey).then(
            (c) => c as unknown as FileCache,
            () => null,
          )
        : Promise.resolve(null));
}

/** The graph of the claimed file, its weights streamed into the claim's pieces. */
async function answer(claim: Claim, request: string, fallback: () => Promise<FileCache | null>): Promise<Response> {
  const file = request.slice(claim.prefix.length);
  const response = await open(claim, request, fallback);
  const size = await statedLength(response);
  if (size === undefined || !response.body) throw new ModelLoadError(`${request}: a body of unstated length is left to transformers.js.`);
  const { graph, externalData } = await readStreamed(response.body, claim.name(file), size, claim.onProgress && ((loaded) => claim.onProgress!(file, loaded, size)));
  for (const [path, data] of Object.entries(externalData)) claim.pieces.set(path, data);
  return new Response(graph as Uint8Array<ArrayBuffer>, { headers: { 'Content-Length': String(graph.length) } });
}

/**
 * The claimed file as a response: from the page's origin, or a hub file from the cache (put there
 * first when it is not, as transformers.js would have, so the next load finds it).
 */
async function open(claim: Claim, request: string, fallback: () => Promise<FileCache | null>): Promise<Response> {
  if (claim.local) return fetched(request);
  const cache = await fallback();
  const cached = await cache?.match(request);
  if (cached instanceof Response) return cached;
  if (!claim.mayDownload) throw new ModelLoadError(`${request} is not in the cache, and remote models are not allowed.`);
  if (!cache) return fetched(request);
  await cache.put(request, await fetched(request));
  const stored = await cache.match(request);
  if (!(stored instanceof Response)) throw new ModelLoadError(`${request} was not found in the cache it was put in.`);
  return stored;
}

async function fetched(url: string): Promise<Response> {
  const response = await fetch(url);
  if (!response.ok) throw new ModelLoadError(`Could not fetch ${url} (HTTP ${response.status}).`);
  return response;
}

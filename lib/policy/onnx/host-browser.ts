/**
 * Models in a browser (a page or a worker): a URL or a path starting with `/`, `./` or `../` is
 * resolved against the page and must be on the page's origin (it is fetched as
 * `<path>/config.json`, ...); anything else is a hub id. The bundled model is served at
 * `/models/webgrpo-tiny/` (or `./models/webgrpo-tiny/` under a sub-path).
 */
import { ModelLoadError } from '../../errors.js';
import { forwardReadAt, inlineAsExternal } from './inline-data.js';
import { chunks, fetchBytes, fetchRanges, hubFileUrl, isHubId, rangesOfResponse, statedLength, type HubEnv, type ModelHost, type ModelLocation } from './location.js';
import { readStreamed, withStreamedModel, type CacheEnv } from './streamed-model.js';

export const browserHost: ModelHost = {
  isNode: false,
  loadingModel: (env, location, load, onStreamed) => withStreamedModel(env as CacheEnv, location, load, onStreamed),
  async locate(text) {
    return locateInBrowser(text);
  },
  async readFile(env, location, file) {
    if (location.local) return fetchBytes(`${location.id}/${file}`);
    // A hub model: transformers.js keeps browser downloads in the Cache API under their URL.
    const url = hubFileUrl(env, location.id, file);
    const caches = (globalThis as { caches?: CacheStorage }).caches;
    if (caches && env.useBrowserCache) {
      const cached = await (await caches.open(env.cacheKey ?? 'transformers-cache')).match(url);
      if (cached) return new Uint8Array(await cached.arrayBuffer());
    }
    return fetchBytes(url);
  },
  async readRanges(env, location, file, ranges) {
    if (location.local) return fetchRanges(`${location.id}/${file}`, ranges);
    const url = hubFileUrl(env, location.id, file);
    const caches = (globalThis as { caches?: CacheStorage }).caches;
    if (caches && env.useBrowserCache) {
      const cached = await (await caches.open(env.cacheKey ?? 'transformers-cache')).match(url);
      if (cached) return rangesOfResponse(cached, ranges);
    }
    return fetchRanges(url, ranges);
  },
  /**
   * The graph read as it streams in, its large inline weights left as references into the file
   * (inline-data.ts) for readRanges to read one by one: a page never holds the file whole beside
   * the weights read out of it (at Qwen2.5-0.5B's shape in q4, 769 MB of file beside 776 MB of
   * weights, BENCHMARKS scale-tab). A body whose length is not stated (or is compressed) is read
   * whole instead.
   */
  async readGraph(env, location, file) {
    const { response, size } = await openSized(env, location, file);
    if (!response.body || size === undefined) return undefined;
    const body = chunks(response.body);
    try {
      return await inlineAsExternal(forwardReadAt(body), file.slice(file.lastIndexOf('/') + 1), size);
    } finally {
      // Cancels the download past the graph's last field.
      await body.return(undefined);
    }
  },
  /**
   * The graph and its inline weights in one pass over the streamed file (streamed-model.ts'
   * readStreamed), so the engine's weights cost one read of the file, not two. Any failure leaves
   * the file to readGraph and readRanges (which report what is wrong with it).
   */
  async readModel(env, location, file) {
    const { response, size } = await openSized(env, location, file);
    if (!response.body || size === undefined) return undefined;
    return readStreamed(response.body, file.slice(file.lastIndexOf('/') + 1), size).catch(() => undefined);
  },
};

/** openFile's response and its stated length; the body is cancelled where the length is not stated (or the body is compressed). */
async function openSized(env: HubEnv, location: ModelLocation, file: string): Promise<{ response: Response; size?: number }> {
  const response = await openFile(env, location, file);
  return { response, size: await statedLength(response) };
}

/** One file of the model as a response: fetched from the page's origin, or a hub file from transformers.js' browser cache or the hub. */
async function openFile(env: HubEnv, location: ModelLocation, file: string): Promise<Response> {
  const url = location.local ? `${location.id}/${file}` : hubFileUrl(env, location.id, file);
  const caches = (globalThis as { caches?: CacheStorage }).caches;
  if (!location.local && caches && env.useBrowserCache) {
    const cached = await (await caches.open(env.cacheKey ?? 'transformers-cache')).match(url);
    if (cached) return cached;
  }
  const response = await fetch(url);
  if (!response.ok) throw new ModelLoadError(`Could not fetch ${url} (HTTP ${response.status}).`);
  return response;
}

function locateInBrowser(text: string): ModelLocation {
  const looksLikePath = /^(\/|\.\.?\/)/.test(text) || /^[a-z][a-z\d+.-]*:/i.test(text);
  if (!looksLikePath) {
    if (isHubId(text)) return { id: text, local: false };
    throw new ModelLoadError(`"${text}" is neither a hub id (owner/name) nor a path; start paths with "/" or "./".`);
  }
  const url = new URL(text, globalThis.document?.baseURI ?? globalThis.location?.href);
  if (url.origin !== globalThis.location?.origin) {
    throw new ModelLoadError(`Model URL ${url.href} is on another origin; serve the model folder from this page's origin, or use a hub id.`);
  }
  return { id: url.pathname.replace(/\/+$/, ''), local: true };
}

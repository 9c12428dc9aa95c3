/**
 * Models in a browser (a page or a worker): a URL or a path starting with `/`, `./` or `../` is
 * resolved against the page and must be on the page's origin (it is fetched as
 * `<path>/config.json`, ...); anything else is a hub id. The bundled model is served at
 * `/models/webgrpo-tiny/` (or `./models/webgrpo-tiny/` under a sub-path).
 */
import { ModelLoadError } from '../../errors.js';
import { fetchBytes, fetchRanges, hubFileUrl, isHubId, rangesOfResponse, type ModelHost, type ModelLocation } from './location.js';

export const browserHost: ModelHost = {
  isNode: false,
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
};

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

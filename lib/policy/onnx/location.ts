/**
 * Where a model's files come from, in the terms transformers.js understands. transformers.js takes
 * a hub id, or a path that is not shaped like a hub id; it does not take full URLs. How a `model`
 * string names files, and how one file is read, depends on where the code runs, so each platform
 * is a `ModelHost` of its own module: Node's (host-node.ts: folders on disk) and browsers'
 * (host-browser.ts: the page's origin). The browser build of `webgrpo/onnx` holds only the
 * browser's, so it has no `node:` import at all.
 *
 * Hub ids go through the same loader (files fetched from huggingface.co, cached by transformers.js).
 */
import { ModelLoadError } from '../../errors.js';
import { rangesOfStream, type ByteRange, type ExternalPieces } from './external-data.js';

/**
 * A response's stated length where its body is the file's bytes as they are (a stated length, not
 * compressed), which a reader by position can walk; undefined otherwise, its body cancelled.
 */
export async function statedLength(response: Response): Promise<number | undefined> {
  const size = Number(response.headers.get('Content-Length'));
  const encoding = response.headers.get('Content-Encoding');
  if (response.body && size > 0 && (!encoding || encoding === 'identity')) return size;
  await response.body?.cancel().catch(() => undefined);
  return undefined;
}

export interface ModelLocation {
  /** What to pass to transformers.js' from_pretrained. */
  id: string;
  /** Read only local files (folders and same-origin URLs); hub ids may download. */
  local: boolean;
}

/** The settings of transformers.js' `env` that say where it downloads and caches hub files. */
export interface HubEnv {
  remoteHost: string;
  remotePathTemplate: string;
  cacheDir?: string | null;
  useBrowserCache?: boolean;
  cacheKey?: string;
  /** A cache transformers.js asks for a file before it reads the file itself (Web Cache API's match and put). */
  useCustomCache?: boolean;
  customCache?: { match(request: string): Promise<unknown>; put(request: string, response: unknown): Promise<void> } | null;
}

export interface ModelHost {
  readonly isNode: boolean;
  /** Where `model` (a trimmed, non-empty string) is. */
  locate(model: string): Promise<ModelLocation>;
  /** One file of the model (`onnx/model.onnx`), from where transformers.js found it. */
  readFile(env: HubEnv, location: ModelLocation, file: string): Promise<Uint8Array>;
  /** Byte ranges of one file (sorted, not overlapping), each into an array of its own, never the whole file at once. */
  readRanges(env: HubEnv, location: ModelLocation, file: string, ranges: ByteRange[]): Promise<Uint8Array[]>;
  /**
   * Hosts with positional reads: the graph file with its large inline weights as references into
   * itself (inline-data.ts), for readRanges to read one by one; undefined where the file is not
   * on disk (readFile then reads it).
   */
  readGraph?(env: HubEnv, location: ModelLocation, file: string): Promise<Uint8Array | undefined>;
  /**
   * Hosts that stream: the graph file's graph and its large inline weights, each in an array of
   * its own, in one pass (what readGraph and then readRanges read in two); undefined where one
   * pass cannot serve (a body of unstated length, a graph with data files of its own).
   */
  readModel?(env: HubEnv, location: ModelLocation, file: string): Promise<ExternalPieces | undefined>;
  /**
   * Hosts with a file system: `create` gets the path of `graph` written to a private temporary
   * folder beside links to the files of `file`'s folder, so the references readGraph left in it
   * (and those to external data files) resolve to the model's own files and the runtime reads the
   * weights from disk, none through JavaScript. The folder is removed once `create` settles;
   * undefined where `file` is not on disk.
   */
  withGraphOnDisk?<T>(env: HubEnv, location: ModelLocation, file: string, graph: Uint8Array, create: (path: string) => Promise<T>): Promise<T | undefined>;
  /**
   * `load` (transformers.js loading `location`'s model) with the model's graph files answered from
   * a cache that lasts the load, so transformers.js never holds a whole file itself: in Node their
   * paths, which onnxruntime reads (host-node.ts); in a page the graph without its weights, the file
   * streamed once by webgrpo (streamed-model.ts), whose progress `onStreamed` reports.
   */
  loadingModel?<T>(env: HubEnv, location: ModelLocation, load: () => Promise<T>, onStreamed?: (file: string, loaded: number, total: number) => void): Promise<T>;
}

const HUB_ID = /^(\b[\w\-.]+\b\/)?\b[\w\-.]{1,96}\b$/;

export async function resolveModelLocation(model: string | URL, host: ModelHost): Promise<ModelLocation> {
  if (typeof (model as unknown as PromiseLike<unknown> | null)?.then === 'function') {
    throw new ModelLoadError('`model` is a Promise: await it first, as in `loadOnnxPolicy({ model: await skillModelPath() })` (bundledModelPath and skillModelPath resolve to the folder).');
  }
  if (typeof model !== 'string' && !(model instanceof URL)) {
    throw new ModelLoadError('`model` must be a folder path, a URL or a Hugging Face hub id (a string).');
  }
  const text = String(model).trim();
  if (!text) throw new ModelLoadError('`model` is empty: give a folder path, a URL or a Hugging Face hub id.');
  return host.locate(text);
}

export function isHubId(text: string): boolean {
  return HUB_ID.test(text) && !text.includes('..') && !text.includes('--');
}

/** The URL transformers.js downloads a hub model's file from (and keeps it under in the Cache API). */
export function hubFileUrl(env: HubEnv, id: string, file: string): string {
  return `${env.remoteHost.replace(/\/+$/, '')}/${env.remotePathTemplate.replaceAll('{model}', id).replaceAll('{revision}', 'main').replace(/^\/+/, '')}${file}`;
}

export async function fetchBytes(url: string): Promise<Uint8Array> {
  const response = await fetch(url);
  if (!response.ok) throw new ModelLoadError(`Could not fetch ${url} (HTTP ${response.status}).`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The ranges of a fetched file, copied out of its body as it streams in (the download stops after the last). */
export async function fetchRanges(url: string, ranges: ByteRange[]): Promise<Uint8Array[]> {
  const response = await fetch(url);
  if (!response.ok || !response.body) throw new ModelLoadError(`Could not fetch ${url} (HTTP ${response.status}).`);
  return rangesOfResponse(response, ranges);
}

export function rangesOfResponse(response: Response, ranges: ByteRange[]): Promise<Uint8Array[]> {
  if (!response.body) throw new ModelLoadError(`${response.url || 'The response'} has no body.`);
  return rangesOfStream(chunks(response.body), ranges);
}

/**
 * A stream's chunks through its reader (not every browser iterates a ReadableStream itself);
 * leaving early cancels it. A byte stream (a fetched body) is read into one buffer used again for
 * every chunk, so passing a file of hundreds of MB leaves no chunks behind for the garbage
 * collector (a page's weights read peaked 450 MB above where they ended, BENCHMARKS scale-tab): a
 * chunk is valid until the next one is asked for, and whoever keeps one copies it.
 */
export async function* chunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  let byob: ReadableStreamBYOBReader | undefined;
  try {
    byob = body.getReader({ mode: 'byob' });
  } catch {
    byob = undefined;
  }
  const reader = byob ?? body.getReader();
  try {
    let buffer: ArrayBuffer = new ArrayBuffer(byob ? CHUNK : 0);
    for (;;) {
      const { done, value } = byob ? await byob.read(new Uint8Array(buffer)) : await (reader as ReadableStreamDefaultReader<Uint8Array>).read();
      if (done || !value) return;
      if (byob) buffer = value.buffer as ArrayBuffer;
      yield value;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** The buffer a byte stream is read through. */
const CHUNK = 1 << 20;

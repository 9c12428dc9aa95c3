/**
 * Models in Node: an existing folder (absolute, relative, or a file: URL) becomes an absolute path
 * read from disk; anything else shaped like `owner/name` is a Hugging Face hub id, whose files
 * transformers.js keeps in its cache folder. Only the Node entry of `webgrpo/onnx` reaches this
 * module. Its `node:` modules are imported on use: the repository's own browser test pages load
 * the entry that picks a host at run time, and never call this one.
 */
import { ModelLoadError } from '../../errors.js';
import { inlineAsExternal } from './inline-data.js';
import { fetchBytes, fetchRanges, hubFileUrl, isHubId, type HubEnv, type ModelHost, type ModelLocation } from './location.js';

export const nodeHost: ModelHost = {
  isNode: true,
  locate: locateInNode,
  async readFile(env, location, file) {
    const { readFile } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const path = location.local ? join(location.id, file) : join(String(env.cacheDir ?? ''), location.id, file);
    try {
      return new Uint8Array(await readFile(path));
    } catch (cause) {
      if (location.local) throw new ModelLoadError(`Could not read ${path}.`, { cause });
    }
    // A hub model not in transformers.js' cache folder: download it.
    return fetchBytes(hubFileUrl(env, location.id, file));
  },
  async readGraph(env, location, file) {
    const { open } = await import('node:fs/promises');
    const { basename, join } = await import('node:path');
    const path = location.local ? join(location.id, file) : join(String(env.cacheDir ?? ''), location.id, file);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, 'r');
    } catch {
      return undefined;
    }
    try {
      const { size } = await handle.stat();
      return await inlineAsExternal(
        (offset, length) => readPiece(handle, offset, length),
        basename(file),
        size,
      );
    } finally {
      await handle.close();
    }
  },
  async withGraphOnDisk(env, location, file, graph, create) {
    const { link, mkdtemp, readdir, rm, writeFile } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { dirname, join } = await import('node:path');
    const path = location.local ? join(location.id, file) : join(String(env.cacheDir ?? ''), location.id, file);
    const folder = await mkdtemp(join(tmpdir(), 'webgrpo-graph-')).catch(() => undefined);
    if (!folder) return undefined;
    try {
      // Hard links, not copies or symbolic links: onnxruntime resolves the graph's references
      // beside the graph it is given and refuses any whose real path lies outside that folder.
      // Where the files cannot be linked (another file system, a file not ours), the caller
      // builds the session from the weights in memory instead.
      try {
        const siblings = await readdir(dirname(path), { withFileTypes: true });
        for (const entry of siblings) if (entry.isFile()) await link(join(dirname(path), entry.name), join(folder, entry.name));
        let name = 'rewritten.onnx';
        while (siblings.some((entry) => entry.name === name)) name = `_${name}`;
        await writeFile(join(folder, name), graph);
        return await create(join(folder, name));
      } catch (cause) {
        if (cause instanceof ModelLoadError) throw cause;
        return undefined;
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  },
  loadingModel: (env, location, load) => loadingGraphsByPath(env, location, load),
  async readRanges(env, location, file, ranges) {
    const { open } = await import('node:fs/promises');
    const { join } = await import('node:path');
    const path = location.local ? join(location.id, file) : join(String(env.cacheDir ?? ''), location.id, file);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, 'r');
    } catch (cause) {
      if (location.local) throw new ModelLoadError(`Could not read ${path}.`, { cause });
      return fetchRanges(hubFileUrl(env, location.id, file), ranges);
    }
    try {
      // Each range at its position: only the bytes the tensors need, each in an array of its own.
      // The arrays are made all at once, before any read, and then filled: made one by one
      // between reads, each await let V8 finish a collection that the arrays' growth had
      // started, about twice as many full collections, at SmolLM2-135M's 211 weights 130-170 ms
      // of CPU a read of them (BENCHMARKS, scale), which a LoRA run taking turns pays every step.
      const pieces = ranges.map(({ length }) => new Uint8Array(length));
      return await Promise.all(ranges.map(({ offset }, i) => fillPiece(handle, pieces[i], offset)));
    } finally {
      await handle.close();
    }
  },
};

/** `length` bytes from `offset` in a buffer of their own (shorter where the file ends first): a read may return fewer bytes than asked. */
function readPiece(handle: import('node:fs/promises').FileHandle, offset: number, length: number): Promise<Uint8Array> {
  return fillPiece(handle, new Uint8Array(length), offset);
}

/** `piece` filled from `offset` (a view of what was read where the file ends first). */
async function fillPiece(handle: import('node:fs/promises').FileHandle, piece: Uint8Array, offset: number): Promise<Uint8Array> {
  const { length } = piece;
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(piece, filled, length - filled, offset + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === length ? piece : piece.subarray(0, filled);
}

async function locateInNode(text: string): Promise<ModelLocation> {
  const { existsSync, statSync } = await import('node:fs');
  const { resolve } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  if (/^https?:/i.test(text)) {
    throw new ModelLoadError(`Node loads models from a folder or a hub id, not a URL (${text}). Download the folder first.`);
  }
  const path = resolve(text.startsWith('file:') ? fileURLToPath(text) : text);
  if (existsSync(path)) {
    if (!statSync(path).isDirectory()) throw new ModelLoadError(`${path} is a file; give the model folder (the one holding config.json).`);
    return { id: path, local: true };
  }
  if (isHubId(text)) return { id: text, local: false };
  throw new ModelLoadError(
    `Model folder ${path} does not exist. Give a model folder, a hub id such as "HuggingFaceTB/SmolLM2-135M-Instruct", ` +
      'or the bundled models: bundledModelPath() and skillModelPath() from webgrpo/onnx (`--model webgrpo-tiny` / `webgrpo-skill` on the command line).',
  );
}

/** An ONNX graph file and its external data files, which onnxruntime-node reads from their paths. */
const GRAPH_FILE = /\.onnx(_data(_\d+)?)?$/;

/**
 * transformers.js (4.3) answers a local file with a response that starts streaming the whole file
 * into memory as it is made (its FileResponse), also where it only wants the file's path: the
 * ONNX graph and its external data in Node, which onnxruntime reads itself. Nobody reads that
 * stream and it holds what it read until the file ends; behind onnxruntime's work on the thread
 * pool it reads slowly: at SmolLM2-135M's shape the 538 MB file was still coming in, some 40 MB
 * per GRPO iteration, minutes after the load (BENCHMARKS, scale). Loading a local folder, a
 * cache that answers the graph files with their paths (as transformers.js takes a cached path)
 * keeps that response from being made; everything else it leaves to transformers.js, and the
 * caller's own cache settings come back once the load settles.
 */
async function loadingGraphsByPath<T>(env: HubEnv, location: ModelLocation, load: () => Promise<T>): Promise<T> {
  if (!location.local || env.useCustomCache) return load();
  const { existsSync } = await import('node:fs');
  const { sep } = await import('node:path');
  const folder = location.id;
  // A graph file by its path inside the folder (transformers.js asks by its local path, then by its remote URL).
  const answered = new Map<string, string>();
  const cache = {
    async match(request: string): Promise<string | undefined> {
      if (!GRAPH_FILE.test(request)) return undefined;
      if (request.startsWith(folder + sep) || request.startsWith(`${folder}/`)) {
        if (!existsSync(request)) return undefined;
        answered.set(request.slice(folder.length + 1).split(sep).join('/'), request);
        return request;
      }
      // Its remote URL names the folder as the model id; another folder's files are not answered.
      const id = `${folder.replace(/^[/\\]+/, '')}/`;
      if (!/^https?:/.test(request) || !request.includes(id)) return undefined;
      for (const [file, path] of answered) if (request.endsWith(`/${file}`)) return path;
      return undefined;
    },
    async put(): Promise<void> {},
  };
  const before = { useCustomCache: env.useCustomCache, customCache: env.customCache };
  env.useCustomCache = true;
  env.customCache = cache;
  try {
    return await load();
  } finally {
    env.useCustomCache = before.useCustomCache;
    env.customCache = before.customCache;
  }
}

/**
 * Where a model's files come from, in the terms transformers.js understands. transformers.js takes
 * a hub id, or a path that is not shaped like a hub id; it does not take full URLs. So:
 *
 * - Node: an existing folder (absolute, relative, or a file: URL) becomes an absolute path read from
 *   disk; anything else shaped like `owner/name` is a Hugging Face hub id.
 * - Browsers: a URL or a path starting with `/`, `./` or `../` is resolved against the page and
 *   must be on the page's origin (it is fetched as `<path>/config.json`, ...); anything else is a
 *   hub id. The bundled model is served at `/models/webgrpo-tiny/` (or `./models/webgrpo-tiny/`
 *   under a sub-path).
 *
 * Hub ids go through the same loader (files fetched from huggingface.co, cached by transformers.js).
 */
import { ModelLoadError } from '../../errors.js';

export interface ModelLocation {
  /** What to pass to transformers.js' from_pretrained. */
  id: string;
  /** Read only local files (folders and same-origin URLs); hub ids may download. */
  local: boolean;
}

const HUB_ID = /^(\b[\w\-.]+\b\/)?\b[\w\-.]{1,96}\b$/;

export async function resolveModelLocation(model: string | URL, isNode: boolean): Promise<ModelLocation> {
  if (typeof (model as unknown as PromiseLike<unknown> | null)?.then === 'function') {
    throw new ModelLoadError('`model` is a Promise: await it first, as in `loadOnnxPolicy({ model: await skillModelPath() })` (bundledModelPath and skillModelPath resolve to the folder).');
  }
  if (typeof model !== 'string' && !(model instanceof URL)) {
    throw new ModelLoadError('`model` must be a folder path, a URL or a Hugging Face hub id (a string).');
  }
  const text = String(model).trim();
  if (!text) throw new ModelLoadError('`model` is empty: give a folder path, a URL or a Hugging Face hub id.');
  return isNode ? resolveInNode(text) : resolveInBrowser(text);
}

async function resolveInNode(text: string): Promise<ModelLocation> {
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
  throw new ModelLoadError(`Model folder ${path} does not exist. Run \`npm run build:model\` for the bundled model, or give a hub id such as "HuggingFaceTB/SmolLM2-135M-Instruct".`);
}

function resolveInBrowser(text: string): ModelLocation {
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

function isHubId(text: string): boolean {
  return HUB_ID.test(text) && !text.includes('..') && !text.includes('--');
}

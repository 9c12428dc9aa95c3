/**
 * `webgrpo serve --model <dir|id> [--port 8000] [--api-key KEY]`: the OpenAI-compatible server
 * on a local ONNX model, until SIGINT/SIGTERM (then in-flight requests finish and the feedback
 * file is flushed before exit).
 */
import { open } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { basename, resolve } from 'node:path';
import type { OnnxDevice } from '../onnx.js';
import type { Policy } from '../core/policy.js';
import { serve, type ServeOptions, type WebgrpoServer } from '../serve/server.js';
import { closeOnSignals } from '../serve/signals.js';
import { openFileSessionStore, type FileSessionStore } from '../node.js';
import type { JsonlFormat } from '../export/jsonl.js';
import { modelPath } from './model-arg.js';
import { UsageError } from './train-flags.js';

const HELP = `Usage: webgrpo serve --model <dir|hub id> [options]

Serves a model over an OpenAI-compatible API (/v1/chat/completions, /v1/completions,
/v1/models) plus ask/tell feedback (/v1/feedback, /v1/groups/:id) and /health.

Options:
  --model <name|dir|id>     webgrpo-tiny or webgrpo-skill (the bundled models), a model folder,
                            or a hub id (required)
  --port <n>                port (default 8000; 0 picks a free one)
  --host <addr>             interface (default 127.0.0.1; 0.0.0.0 exposes it to the network)
  --api-key <key>           require "Authorization: Bearer <key>" (or set WEBGRPO_API_KEY);
                            an empty key is an error
  --allowed-host <name>     a name besides the listening address that clients may call the
                            server by (the Host header; others get 403); repeatable, '*' for any
  --served-model-name <id>  model name clients send (default: the folder name or hub id)
  --device <d>              auto | cpu | wasm | webgpu (default auto)
  --store <dir>             keep groups and their feedback in this folder, so they survive a
                            restart (the folder webgrpo train keeps runs in works too)
  --feedback-file <path>    append told groups to this JSONL file (TRL format + rewards)
  --feedback-format <f>     conversational | standard (default conversational)
  --max-tokens <n>          largest max_tokens a request may ask for (default 4096)
  --max-group-bytes <size>  memory for answered groups without --store, e.g. 512MiB (default a
                            quarter of the heap limit); the oldest go first, and a tell of an
                            evicted group gets 410 group_evicted
  --cors-origin <origin>    allow browser calls from this origin ('*' for any; by default a
                            request with an Origin header is refused); repeatable
  -h, --help                this help`;

export type PolicyLoader = (model: string, device: OnnxDevice, log: (line: string) => void) => Promise<Policy>;

const DEVICES: readonly OnnxDevice[] = ['auto', 'cpu', 'wasm', 'webgpu'];

/** The ONNX runtime loads only here, when a model is served. */
async function loadOnnx(model: string, device: OnnxDevice, log: (line: string) => void): Promise<Policy> {
  const { loadOnnxPolicy } = await import('../onnx.js');
  let reported = -1;
  return loadOnnxPolicy({
    model: await modelPath(model),
    device,
    onProgress: ({ status, loaded, total }) => {
      const percent = total > 0 ? Math.floor((100 * loaded) / total) : 0;
      if (status === 'download' && percent >= reported + 25) {
        reported = percent;
        log(`webgrpo serve: loading ${model}: ${percent}%`);
      }
    },
  });
}

/** Why `path` cannot be appended to (its error code), or undefined when it can. */
async function notAppendable(path: string): Promise<string | undefined> {
  try {
    await (await open(path, 'a')).close();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

const UNITS: Record<string, number> = { '': 1, b: 1, kib: 1 << 10, mib: 1 << 20, gib: 1 << 30 };

/** Bytes in `256MiB`, `1GiB` or `1048576`; null when it is not such a size. */
function byteSize(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) return null;
  const bytes = Math.floor(Number(match[1]) * unit);
  return bytes >= 1 && Number.isSafeInteger(bytes) ? bytes : null;
}

const OPTIONS = {
  model: { type: 'string' },
  port: { type: 'string', default: '8000' },
  host: { type: 'string', default: '127.0.0.1' },
  'api-key': { type: 'string' },
  'served-model-name': { type: 'string' },
  device: { type: 'string', default: 'auto' },
  store: { type: 'string' },
  'feedback-file': { type: 'string' },
  'feedback-format': { type: 'string', default: 'conversational' },
  'max-tokens': { type: 'string', default: '4096' },
  'max-group-bytes': { type: 'string' },
  'cors-origin': { type: 'string', multiple: true },
  'allowed-host': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

/** The flags that need checking, checked. */
interface CheckedFlags {
  model: string;
  port: number;
  maxTokens: number;
  maxGroupBytes: number | undefined;
  format: JsonlFormat;
  device: OnnxDevice;
  apiKey: string | undefined;
  feedbackFile: string | undefined;
}

export async function run(argv: string[], loadPolicy: PolicyLoader = loadOnnx): Promise<number> {
  let values: Values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true }));
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  let flags: CheckedFlags;
  try {
    flags = await checkFlags(values);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`webgrpo serve: ${error.message}\n\nRun \`webgrpo serve --help\` for the options.`);
    return 2;
  }
  const log = (line: string) => console.error(line);
  const store = values.store !== undefined ? await openFileSessionStore(resolve(values.store)) : undefined;
  log(`webgrpo serve: loading ${flags.model} ...`);
  const policy = await loadPolicy(flags.model, flags.device, log);
  const server = await serve(serveOptions(values, flags, policy, store, log));
  if (store) log(`webgrpo serve: groups and feedback are kept in ${store.root}`);
  console.log(`webgrpo serve: ${policy.info.model} (${policy.info.backend}) at ${server.url}${flags.apiKey !== undefined ? ' (API key required)' : ''}`);
  return untilClosed(server, policy, log);
}

/** The flags checked in order, the feedback file (like the store) before the model loads, so a bad one fails fast. */
async function checkFlags(values: Values): Promise<CheckedFlags> {
  if (!values.model) throw new UsageError('--model is required (a model folder or hub id).');
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0..65535, got ${values.port}.`);
  const maxTokens = Number(values['max-tokens']);
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new UsageError(`--max-tokens must be a positive integer, got ${values['max-tokens']}.`);
  const maxGroupBytes = values['max-group-bytes'] === undefined ? undefined : byteSize(values['max-group-bytes']);
  if (maxGroupBytes === null) throw new UsageError(`--max-group-bytes must be a size such as 268435456, 256MiB or 1GiB, got ${values['max-group-bytes']}.`);
  const format = values['feedback-format'];
  if (format !== 'standard' && format !== 'conversational') throw new UsageError(`--feedback-format must be standard or conversational, got ${format}.`);
  const device = values.device as OnnxDevice;
  if (!DEVICES.includes(device)) throw new UsageError(`--device must be one of ${DEVICES.join(', ')}, got ${values.device}.`);
  const apiKey = values['api-key'] ?? process.env.WEBGRPO_API_KEY;
  if (apiKey !== undefined && apiKey.trim() === '') {
    const from = values['api-key'] !== undefined ? '--api-key' : 'WEBGRPO_API_KEY';
    throw new UsageError(`${from} is empty, which would serve without authentication; give a key, or leave ${from} out to serve without one.`);
  }
  if (apiKey !== undefined && apiKey !== apiKey.trim()) throw new UsageError('the API key must not start or end with spaces.');
  const feedbackFile = values['feedback-file'];
  const problem = feedbackFile !== undefined ? await notAppendable(feedbackFile) : undefined;
  if (problem) throw new UsageError(`--feedback-file ${feedbackFile} cannot be opened for appending (${problem}); choose a writable file.`);
  return { model: values.model, port, maxTokens, maxGroupBytes, format, device, apiKey, feedbackFile };
}

/** What the flags ask of the server; the optional ones only where given. */
function serveOptions(values: Values, flags: CheckedFlags, policy: Policy, store: FileSessionStore | undefined, log: (line: string) => void): ServeOptions {
  const { apiKey, maxGroupBytes, feedbackFile } = flags;
  return {
    policy,
    host: values.host!,
    port: flags.port,
    ...(apiKey !== undefined ? { apiKey } : {}),
    modelId: values['served-model-name'] ?? basename(flags.model.replace(/[\\/]+$/, '')),
    maxTokens: flags.maxTokens,
    ...(maxGroupBytes !== undefined ? { maxGroupBytes } : {}),
    ...(feedbackFile !== undefined ? { feedbackFile, feedbackFormat: flags.format } : {}),
    ...(values['cors-origin'] ? { corsOrigins: values['cors-origin'] } : {}),
    ...(values['allowed-host'] ? { allowedHosts: values['allowed-host'] } : {}),
    ...(store ? { store } : {}),
    log,
  };
}

/** Serves until SIGINT/SIGTERM; then the server closes, the model is disposed and the exit code is 0 (1 where a close failed). */
function untilClosed(server: WebgrpoServer, policy: Policy, log: (line: string) => void): Promise<number> {
  return new Promise<number>((resolve) => {
    closeOnSignals(server, {
      log,
      onClosed: () => {
        void policy.dispose().finally(() => resolve(process.exitCode === 1 ? 1 : 0));
      },
    });
  });
}

/**
 * `serve()`: the OpenAI-compatible HTTP server over one policy, on `node:http`. Every completion
 * request is an ask of one session (its id is the group id); `POST /v1/feedback` is the tell.
 * Generations wait in the session's queue, so concurrent clients never share the model at once.
 * `close()` is graceful: no new requests, in-flight ones (streams too) run to their end, the
 * feedback log and the store are flushed, then the sockets close.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidInputError } from '../errors.js';
import { jsonlFileSink } from '../export/file.js';
import type { JsonlFormat } from '../export/jsonl.js';
import type { Policy } from '../policy/types.js';
import { MemorySessionStore } from '../session/memory-store.js';
import { createSession, type Session } from '../session/session.js';
import type { SessionStore } from '../session/types.js';
import { ApiError } from './api-error.js';
import { createApp } from './app.js';
import { sendError } from './http.js';

interface ServeCommon {
  /** Interface to listen on. Default 127.0.0.1 (this machine only). */
  host?: string;
  /** Default 8000; 0 picks a free port (see `port` on the result). */
  port?: number;
  /** When set, every `/v1` request needs `Authorization: Bearer <apiKey>`. Kept in memory only. */
  apiKey?: string;
  /** The model name clients send and `/v1/models` lists. Default `policy.info.model`. */
  modelId?: string;
  /** Largest request body in bytes. Default 1 MiB. */
  bodyLimit?: number;
  /** Largest `max_tokens`. Default 4096. */
  maxTokens?: number;
  /** `max_tokens` when a request gives none. Default 256. */
  defaultMaxTokens?: number;
  /** Largest `n`. Default 64. */
  maxN?: number;
  /** Generations allowed to wait for the model; more get a 503 (clients retry). Default 256. */
  maxPending?: number;
  /**
   * Generations run at once when the policy batches concurrent calls (`generateGroups`, the ONNX
   * policy: their rows share the model's decode steps, and new ones join between steps); 1 queues
   * them one after another. Policies without batching always run one at a time. Default 64.
   */
  maxBatched?: number;
  /** Groups kept in memory when the server makes its own session without a `store`; the oldest go first. Default 10000. */
  maxGroups?: number;
  /** Append every told group to this JSONL file (TRL format plus reward, advantage and ids). */
  feedbackFile?: string;
  /**
   * Format of the feedback file. Default 'conversational', which can hold every group; 'standard'
   * needs each chat group's rendered prompt (a policy that decodes exactly) and refuses feedback otherwise.
   */
  feedbackFormat?: JsonlFormat;
  /** Origins allowed to call from a browser ('*' for any). Default none. */
  corsOrigins?: readonly string[];
  /** How long `close()` waits for in-flight requests before cutting them off. Default 30 s. */
  shutdownTimeoutMs?: number;
  /** One line per request and per server error. Default: silent. */
  log?: (line: string) => void;
}

/**
 * Serve a policy (a session is made for it, keeping its groups in `store`, by default a bounded
 * memory store), or an existing session.
 */
export type ServeOptions = ServeCommon &
  (
    | {
        policy: Policy;
        /**
         * Where the session keeps groups and their feedback. Default: memory, the oldest dropped past
         * `maxGroups`. A persistent store (`openFileSessionStore` from `webgrpo/node`) keeps them
         * across restarts.
         */
        store?: SessionStore;
        session?: undefined;
      }
    | { session: Session; policy?: undefined; store?: undefined }
  );

export interface WebgrpoServer {
  /** Base URL of the API, e.g. `http://127.0.0.1:8000/v1` (what OpenAI clients take as baseURL). */
  readonly url: string;
  readonly port: number;
  readonly session: Session;
  readonly http: Server;
  /** Graceful shutdown; resolves when every request finished and the feedback is on disk. */
  close(): Promise<void>;
}

export async function serve(options: ServeOptions): Promise<WebgrpoServer> {
  const session =
    options.session ??
    createSession({
      policy: options.policy!,
      store: options.store ?? new MemorySessionStore({ maxGroups: options.maxGroups ?? 10_000 }),
      queue: { maxPending: options.maxPending ?? 256, concurrency: options.policy?.generateGroups ? (options.maxBatched ?? 64) : 1 },
    });
  const policy = session.policy;
  const format = options.feedbackFormat ?? 'conversational';
  if (options.apiKey !== undefined && options.apiKey.trim() === '') throw new InvalidInputError('apiKey', 'must not be empty.');
  const sink = options.feedbackFile ? jsonlFileSink(options.feedbackFile) : undefined;
  const log = options.log ?? (() => undefined);
  const app = createApp({
    session,
    modelId: options.modelId ?? policy.info.model,
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    bodyLimit: options.bodyLimit ?? 1 << 20,
    limits: {
      maxN: options.maxN ?? 64,
      maxTokens: options.maxTokens ?? 4096,
      defaultMaxTokens: options.defaultMaxTokens ?? 256,
    },
    corsOrigins: options.corsOrigins ?? [],
    ...(sink ? { feedbackLog: { sink, format } } : {}),
  });

  let closing: Promise<void> | null = null;
  const inFlight = new Map<ServerResponse, AbortController>();
  let drained: (() => void) | null = null;

  const server = createServer((req, res) => {
    const started = Date.now();
    if (closing) {
      res.shouldKeepAlive = false;
      sendError(res, new ApiError(503, 'The server is shutting down; retry against another instance.', { code: 'shutting_down' }));
      return;
    }
    const controller = new AbortController();
    inFlight.set(res, controller);
    // A client that goes away mid-request cancels its generation (or its place in the queue).
    res.on('close', () => {
      if (!res.writableFinished) controller.abort(new Error('client disconnected'));
      inFlight.delete(res);
      log(`${req.method} ${req.url} ${res.statusCode} ${Date.now() - started}ms`);
      if (closing && inFlight.size === 0) drained?.();
    });
    app(req, res, controller.signal).catch((error: unknown) => {
      log(`error in ${req.method} ${req.url}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8000, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  async function shutdown(): Promise<void> {
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // Responses still to come tell their clients not to reuse the connection.
    for (const res of inFlight.keys()) res.shouldKeepAlive = false;
    if (inFlight.size > 0) {
      const timeout = options.shutdownTimeoutMs ?? 30_000;
      await new Promise<void>((resolve) => {
        drained = resolve;
        const timer = setTimeout(() => {
          log(`shutdown: cutting off ${inFlight.size} request(s) still running after ${timeout} ms`);
          for (const controller of inFlight.values()) controller.abort(new Error('server shutting down'));
          resolve();
        }, timeout);
        timer.unref();
      });
    }
    await sink?.flush();
    await session.flush();
    server.closeAllConnections();
    await stopped;
  }

  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    session,
    http: server,
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}

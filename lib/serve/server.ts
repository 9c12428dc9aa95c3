/**
 * `serve()`: the OpenAI-compatible HTTP server over one policy, on `node:http`. Every completion
 * request is an ask of one session (its id is the group id); `POST /v1/feedback` is the tell.
 * Generations wait in the session's queue, so concurrent clients never share the model at once.
 * `close()` is graceful: no new requests, in-flight ones (streams too) run to their end, the
 * feedback log and the store are flushed, then the sockets close.
 */
import { open } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidInputError } from '../errors.js';
import { jsonlFileSink } from '../export/file.js';
import type { JsonlFormat } from '../export/jsonl.js';
import type { Policy } from '../core/policy.js';
import { createSession, type Session } from '../session/session.js';
import type { SessionStore } from '../store/records/session.js';
import { compileResponseFormat } from '../constrain/format.js';
import { ApiError } from './api-error.js';
import { createApp } from './app.js';
import { answerClientError } from './client-error.js';
import { BoundedGroupStore } from './group-store.js';
import { sendError } from './http.js';

interface ServeCommon {
  /** Interface to listen on. Default 127.0.0.1 (this machine only). */
  host?: string;
  /** Default 8000; 0 picks a free port (see `port` on the result). */
  port?: number;
  /**
   * When set, every `/v1` request needs `Authorization: Bearer <apiKey>`. Kept in memory only. An
   * empty key (or one with surrounding spaces, which no header can carry) is an `InvalidInputError`.
   */
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
  /**
   * Most milliseconds a request's `response_format` may take to compile on the event loop
   * (beyond its budget of automaton states) before it is a 400 naming this budget. Default 75:
   * with it no format pauses the other requests (or `/health`) for more than about 100 ms.
   * A format compiled once is kept, so the same schema is not compiled again.
   */
  formatCompileMs?: number;
  /**
   * Most milliseconds a client may take to send its request headers, and its whole request
   * (headers and body), before a 408 closes the connection: a client that trickles headers or
   * declares a body it never sends holds no connection for long. Defaults 10,000 and 30,000.
   */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
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
  /**
   * Estimated bytes of groups (completions, log-probs and alternatives included) kept in memory
   * when the server makes its own session without a `store`; the oldest go first, and a tell or
   * look-up of an evicted group gets a 410 `group_evicted`. Default: a quarter of the heap limit.
   */
  maxGroupBytes?: number;
  /** Append every told group to this JSONL file (TRL format plus reward, advantage and ids). */
  feedbackFile?: string;
  /**
   * Format of the feedback file. Default 'conversational', which can hold every group; 'standard'
   * needs each chat group's rendered prompt (a policy that decodes exactly) and refuses feedback otherwise.
   */
  feedbackFormat?: JsonlFormat;
  /**
   * Origins allowed to call from a browser ('*' for any). Default none: a request carrying any
   * `Origin` header is refused (403), so web pages cannot drive the server.
   */
  corsOrigins?: readonly string[];
  /**
   * Names besides the listening address that the `Host` header may carry (a reverse proxy's or LAN
   * name; '*' for any). Others are refused (403), which stops DNS rebinding. IP literals the server
   * listens on, and `localhost` on a loopback or all-interfaces server, always pass.
   */
  allowedHosts?: readonly string[];
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
         * `maxGroups` or `maxGroupBytes`. A persistent store (`openFileSessionStore` from `webgrpo/node`) keeps them
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

/** Starts the OpenAI-compatible server with ask/tell feedback on a policy; resolves once it listens. */
export async function serve(options: ServeOptions): Promise<WebgrpoServer> {
  const { session, memory } = openSession(options);
  checkApiKey(options.apiKey);
  if (options.feedbackFile !== undefined) await checkWritable(options.feedbackFile);
  // The compiler's first run is mostly the JIT's (a few hundred ms, ten times a warm run): do it
  // before listening, so formatCompileMs measures a request's format, not the warm-up, and the
  // commonest format (`json_object`) is compiled and kept already.
  compileResponseFormat({ type: 'json_object' });
  const sink = options.feedbackFile !== undefined ? jsonlFileSink(options.feedbackFile) : undefined;
  const log = options.log ?? (() => undefined);
  const listenHost = options.host ?? '127.0.0.1';
  const app = createApp({
    session,
    modelId: options.modelId ?? session.policy.info.model,
    ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
    bodyLimit: options.bodyLimit ?? 1 << 20,
    limits: {
      maxN: options.maxN ?? 64,
      maxTokens: options.maxTokens ?? 4096,
      defaultMaxTokens: options.defaultMaxTokens ?? 256,
      formatCompileMs: options.formatCompileMs ?? 75,
    },
    corsOrigins: options.corsOrigins ?? [],
    listenHost,
    allowedHosts: options.allowedHosts ?? [],
    ...(sink ? { feedbackLog: { sink, format: options.feedbackFormat ?? 'conversational' } } : {}),
    ...(memory ? { groupStats: () => memory.stats } : {}),
  });

  const requests = new Requests(log);
  const server = createServer(serverTimeouts(options), (req, res) => requests.handle(req, res, app));
  server.on('clientError', answerClientError);
  await listen(server, options.port ?? 8000, listenHost);
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | null = null;
  const shutdown = async () => {
    const stopped = requests.stop(server);
    await requests.settle(options.shutdownTimeoutMs ?? 30_000);
    await sink?.flush();
    await session.flush();
    server.closeAllConnections();
    await stopped;
  };
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

/** The given session, or one over the given store, or over a bounded memory store (whose stats the app reports). */
function openSession(options: ServeOptions): { session: Session; memory?: BoundedGroupStore } {
  if (options.session) return { session: options.session };
  const memory = options.store
    ? undefined
    : new BoundedGroupStore({
        ...(options.maxGroups !== undefined ? { maxGroups: options.maxGroups } : {}),
        ...(options.maxGroupBytes !== undefined ? { maxBytes: options.maxGroupBytes } : {}),
      });
  const session = createSession({
    policy: options.policy!,
    store: options.store ?? memory!,
    queue: { maxPending: options.maxPending ?? 256, concurrency: options.policy?.generateGroups ? (options.maxBatched ?? 64) : 1 },
  });
  return { session, ...(memory ? { memory } : {}) };
}

function serverTimeouts(options: ServeOptions): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout);
  // Node looks for expired requests every connectionsCheckingInterval: often enough for the limits to hold.
  return { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(100, Math.min(1_000, headersTimeout / 4)) };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The requests in flight, each with the controller that cancels it; refused with a 503 once the server is draining. */
class Requests {
  private readonly inFlight = new Map<ServerResponse, AbortController>();
  private draining = false;
  private drained: (() => void) | null = null;

  constructor(private readonly log: (line: string) => void) {}

  handle(req: IncomingMessage, res: ServerResponse, app: ReturnType<typeof createApp>): void {
    const { inFlight, log } = this;
    const started = Date.now();
    if (this.draining) {
      res.shouldKeepAlive = false;
      sendError(res, new ApiError(503, 'The server is shutting down; retry against another instance.', { code: 'shutting_down' }));
      return;
    }
    const controller = new AbortController();
    inFlight.set(res, controller);
    // A client that goes away mid-request cancels its generation (or its place in the queue).
    res.on('close', () => {
      const finished = res.writableFinished;
      if (!finished) controller.abort(new Error('client disconnected'));
      inFlight.delete(res);
      // A response cut off before its end did not succeed, whatever status its headers said.
      const outcome = finished ? String(res.statusCode) : `aborted${res.headersSent ? ` after ${res.statusCode} headers` : ''}`;
      log(`${req.method} ${logged(req.url)} ${outcome} ${Date.now() - started}ms`);
      if (this.draining && inFlight.size === 0) this.drained?.();
    });
    app(req, res, controller.signal).catch((error: unknown) => {
      log(`error in ${req.method} ${logged(req.url)}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    });
  }

  /**
   * Stops taking requests and closes the idle connections; responses still to come tell their
   * clients not to reuse theirs. Resolves when the server has closed (after closeAllConnections).
   */
  stop(server: Server): Promise<void> {
    this.draining = true;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    for (const res of this.inFlight.keys()) res.shouldKeepAlive = false;
    return stopped;
  }

  /** Waits for the requests in flight, cutting off what still runs after `timeoutMs`. */
  async settle(timeoutMs: number): Promise<void> {
    const { inFlight, log } = this;
    if (inFlight.size === 0) return;
    await new Promise<void>((resolve) => {
      this.drained = resolve;
      const timer = setTimeout(() => {
        log(`shutdown: cutting off ${inFlight.size} request(s) still running after ${timeoutMs} ms`);
        for (const controller of inFlight.values()) controller.abort(new Error('server shutting down'));
        resolve();
      }, timeoutMs);
      timer.unref();
    });
  }
}

function checkApiKey(apiKey: string | undefined): void {
  if (apiKey === undefined) return;
  if (typeof apiKey !== 'string' || apiKey.trim() === '') {
    throw new InvalidInputError('apiKey', 'must not be empty: give a key, or leave it out to serve without authentication.');
  }
  if (apiKey !== apiKey.trim()) throw new InvalidInputError('apiKey', 'must not start or end with spaces (an Authorization header cannot carry them).');
}

/** The feedback file is opened for appending at start-up, so a bad path fails now, not at the first feedback. */
async function checkWritable(path: string): Promise<void> {
  try {
    await (await open(path, 'a')).close();
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'error';
    throw new InvalidInputError('feedbackFile', `${path} cannot be opened for appending (${code}); choose a writable file.`, { cause: error });
  }
}

/** A request's target as the log writes it: the path alone, since a query can carry a key (`?api_key=…`). */
function logged(url: string | undefined): string {
  const target = url ?? '';
  const query = target.indexOf('?');
  return query < 0 ? target : `${target.slice(0, query)}?[query not logged]`;
}

/** Routing of the OpenAI-compatible API onto a session. */
import { StoreQuotaError } from '../errors.js';
import { badField } from './api-error.js';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toJsonl, type JsonlFormat } from '../export/jsonl.js';
import type { JsonlFileSink } from '../export/file.js';
import type { Session } from '../session/session.js';
import { ApiError, toApiError } from './api-error.js';
import { bearerCheck } from './auth.js';
import { feedback, groupView, type FeedbackCheck } from './feedback.js';
import type { GroupStoreStats } from './group-store.js';
import { respond } from './generate.js';
import { requestGuard } from './guard.js';
import { readJson, sendError, sendJson } from './http.js';
import { parseChatRequest, parseCompletionRequest, unknownModel, type Limits } from './requests.js';

export interface AppOptions {
  session: Session;
  modelId: string;
  apiKey?: string;
  bodyLimit: number;
  limits: Limits;
  corsOrigins: readonly string[];
  /** The address the server listens on, which the `Host` header must name (or one of `allowedHosts`). */
  listenHost: string;
  allowedHosts: readonly string[];
  feedbackLog?: { sink: JsonlFileSink; format: JsonlFormat };
  /** What the server's own memory store holds, shown on `/health`. */
  groupStats?: () => GroupStoreStats;
}

type Handler = (req: IncomingMessage, res: ServerResponse, params: string[], signal: AbortSignal) => Promise<void>;

interface Route {
  pattern: RegExp;
  methods: Record<string, Handler>;
}

export function createApp(options: AppOptions): (req: IncomingMessage, res: ServerResponse, signal: AbortSignal) => Promise<void> {
  const checkAuth = options.apiKey !== undefined ? bearerCheck(options.apiKey) : () => undefined;
  const guard = requestGuard(options);
  const routes = routesOf(options);
  return async (req, res, signal) => {
    cors(req, res, options.corsOrigins);
    try {
      guard(req);
      await dispatch(routes, req, res, signal, options.corsOrigins.length > 0, checkAuth);
    } catch (error) {
      answerError(res, error);
    }
  };
}

function routesOf(options: AppOptions): Route[] {
  const { session, modelId, limits } = options;
  const view = (group: Parameters<typeof groupView>[0]) => groupView(group, servedName(group.model, session.policy.info.model, modelId));
  const model = modelCard(options);
  return [
    {
      pattern: /^\/health$/,
      methods: {
        GET: async (_req, res) => {
          const stats = options.groupStats?.();
          const groups = stats && { stored: stats.groups, bytes: stats.bytes, max_bytes: stats.maxBytes, evicted: stats.evicted };
          sendJson(res, 200, { status: 'ok', model: modelId, queue: session.queue.stats, ...(groups ? { groups } : {}) });
        },
      },
    },
    { pattern: /^\/v1\/models$/, methods: { GET: async (_req, res) => sendJson(res, 200, { object: 'list', data: [model] }) } },
    {
      pattern: /^\/v1\/models\/(.+)$/,
      methods: {
        GET: async (_req, res, [id]) => {
          if (id !== modelId) throw unknownModel(id, modelId);
          sendJson(res, 200, model);
        },
      },
    },
    { pattern: /^\/v1\/chat\/completions$/, methods: { POST: generation(options, 'chat') } },
    { pattern: /^\/v1\/completions$/, methods: { POST: generation(options, 'text') } },
    {
      pattern: /^\/v1\/feedback$/,
      methods: {
        POST: async (req, res) => {
          const body = await readJson(req, options.bodyLimit);
          const log = options.feedbackLog;
          const groups = await feedback(session, body, {
            maxCompletions: limits.maxN,
            ...(log?.format === 'standard' ? { check: standardPromptKnown } : {}),
            // The log line goes out before the group is stored as told: a failed write leaves it untold.
            ...(log ? { beforeStore: (group) => logFeedback(log.sink, toJsonl([group], { format: log.format, include: LOGGED_COLUMNS })) } : {}),
          });
          sendJson(res, 200, { object: 'feedback', groups: groups.map(view) });
        },
      },
    },
    {
      pattern: /^\/v1\/groups\/([^/]+)$/,
      methods: { GET: async (_req, res, [id]) => sendJson(res, 200, view(await session.group(decodePathPart(id, 'group id')))) },
    },
  ];
}

/** The served model as `/v1/models` lists it, with whether chat completions honour `response_format` (constrained decoding in the policy). */
function modelCard(options: AppOptions) {
  const responseFormats = options.session.policy.info.responseFormats === true;
  return {
    id: options.modelId,
    object: 'model',
    created: Math.floor(Date.now() / 1000),
    owned_by: 'webgrpo',
    capabilities: { response_format: responseFormats ? ['text', 'json_object', 'json_schema'] : ['text'] },
  };
}

/** POST /v1/chat/completions and /v1/completions: the request parsed against the limits, then sampled (or streamed) by `respond`. */
function generation(options: AppOptions, kind: 'chat' | 'text'): Handler {
  const { session, modelId, limits } = options;
  return async (req, res, _params, signal) => {
    const body = await readJson(req, options.bodyLimit);
    const request = kind === 'chat' ? parseChatRequest(body, limits) : parseCompletionRequest(body, limits);
    if (request.model !== modelId) throw unknownModel(request.model, modelId);
    if (request.responseFormat && session.policy.info.responseFormats !== true) {
      throw badField('response_format', `is not supported by ${session.policy.info.backend} policies here; send {"type": "text"} or leave it out.`, 'unsupported_parameter');
    }
    const id = `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomBytes(12).toString('hex')}`;
    const promptChars = request.input.prompt?.length ?? 0;
    await respond(res, { id, created: Math.floor(Date.now() / 1000), model: modelId, request, promptChars }, session, signal);
  };
}

/** Finds the request's route and method (404, 405 with `allow`), checks the key off /health, and runs the handler. */
async function dispatch(routes: Route[], req: IncomingMessage, res: ServerResponse, signal: AbortSignal, cors: boolean, checkAuth: (req: IncomingMessage) => void): Promise<void> {
  const method = req.method ?? 'GET';
  const path = pathOf(req.url ?? '/');
  if (method === 'OPTIONS' && cors) {
    res.writeHead(204).end();
    return;
  }
  const route = routes.find((r) => r.pattern.test(path));
  if (!route) throw new ApiError(404, `Unknown path ${path}.`, { type: 'not_found_error', code: 'unknown_url' });
  if (path !== '/health') checkAuth(req);
  // HEAD is GET without the body (node:http drops it).
  const handler = route.methods[method === 'HEAD' ? 'GET' : method];
  if (!handler) {
    const allowed = Object.keys(route.methods).flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
    res.setHeader('allow', allowed.join(', '));
    throw new ApiError(405, `${method} is not allowed on ${path}; use ${allowed.join(' or ')}.`, {
      code: 'method_not_allowed',
    });
  }
  const params = route.pattern.exec(path)!.slice(1);
  await handler(req, res, params, signal);
}

/** The error as the client sees it; server-side failures and damaged stored records are thrown on to the log, with the details the client is not shown. */
function answerError(res: ServerResponse, error: unknown): void {
  const apiError = toApiError(error);
  // A request refused for where it comes from (a forged Host, a foreign Origin) gives the
  // browser nothing to read: no CORS headers.
  if (!res.headersSent && (apiError.errorCode === 'invalid_host' || apiError.errorCode === 'origin_not_allowed')) {
    for (const name of res.getHeaderNames()) if (name.startsWith('access-control-') || name === 'vary') res.removeHeader(name);
  }
  if (!res.headersSent) sendError(res, apiError);
  else if (!res.writableEnded) res.end();
  if (apiError.status >= 500 || apiError.errorCode === 'store_corrupt') throw error;
}

/** Appends a feedback log line; a full disk is the 507 a client can act on (retry later), not an internal error. */
async function logFeedback(sink: JsonlFileSink, line: string): Promise<void> {
  try {
    await sink.write(line);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') throw new StoreQuotaError(`The feedback file ${sink.path} is on a full disk (${code}).`, { cause: error });
    // Anything else (the file became a folder, lost its permissions): the server's fault, not the
    // request's, and one its operator can fix; the client learns the group stays untold, not the path.
    throw new ApiError(503, `The server could not append to its feedback log (${typeof code === 'string' ? code : 'write failed'}), so the group stays untold; retry once its operator has fixed the log file.`, {
      code: 'feedback_log_unwritable',
      cause: error,
    });
  }
}

/** TRL's standard format needs a chat group's rendered prompt: refuse (before telling) a group without one. */
function standardPromptKnown(group: Parameters<FeedbackCheck>[0]): void {
  if (group.prompt !== undefined || group.promptText !== undefined) return;
  throw new ApiError(
    400,
    `${group.id ? `Group ${group.id}` : 'This new group'} is a chat whose rendered prompt is unknown, and this server logs feedback in TRL's standard format, which needs it; start the server with the conversational feedback format.`,
    { param: group.id ? 'group_id' : 'messages', code: 'unsupported_parameter' },
  );
}

/** The path of a request target: origin form (`/v1/models`) or absolute form (`http://host/v1/models`). */
function pathOf(target: string): string {
  let url: URL;
  try {
    url = new URL(target, 'http://localhost');
  } catch {
    throw new ApiError(400, `The request target ${JSON.stringify(target.slice(0, 200))} is not a valid URL or path; send a path such as /v1/chat/completions.`, {
      code: 'invalid_url',
    });
  }
  return url.pathname.replace(/\/+$/, '') || '/';
}

/** A path segment decoded, a malformed percent-encoding being the client's error. */
function decodePathPart(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ApiError(400, `The ${what} in the path is not valid percent-encoded UTF-8.`, { code: 'invalid_url' });
  }
}

/**
 * The model name a client sees for a stored group: the served name for groups of the served
 * policy, else the last part of the stored name, so a folder on disk never shows.
 */
function servedName(stored: string, policyModel: string, modelId: string): string {
  if (stored === policyModel) return modelId;
  return stored.split(/[\\/]+/).filter(Boolean).at(-1) ?? stored;
}

/** The feedback log keeps ids so later tells of the same group (the last line wins) can be matched. */
const LOGGED_COLUMNS = ['reward', 'advantage', 'groupId', 'completionId'] as const;

function cors(req: IncomingMessage, res: ServerResponse, origins: readonly string[]): void {
  const origin = req.headers.origin;
  if (!origin || origins.length === 0) return;
  if (!origins.includes('*') && !origins.includes(origin)) return;
  res.setHeader('access-control-allow-origin', origins.includes('*') ? '*' : origin);
  res.setHeader('vary', 'origin');
  res.setHeader('access-control-allow-methods', 'GET, POST, OPTIONS');
  const requested = req.headers['access-control-request-headers'];
  res.setHeader('access-control-allow-headers', requested ?? 'authorization, content-type');
  res.setHeader('access-control-max-age', '600');
}

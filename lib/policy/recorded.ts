/**
 * Recording and replaying a policy. `recordingPolicy` wraps any policy and keeps every group it
 * generates (and every text it encodes); `replayPolicy` answers the same requests with the same
 * outputs, without a model. Loops become deterministic this way: tests replay recorded model
 * outputs, and a run recorded against a hosted model can be replayed offline.
 *
 * A request is matched by its content (prompt or messages, group size, sampling options, seed),
 * not by its order, so a resumed run, which asks fewer questions, is answered exactly as the
 * uninterrupted run was.
 */
import { InvalidInputError, NotFoundError, throwIfAborted } from '../errors.js';
import { sleep } from './sleep.js';
import type { GenerateGroupOptions, GroupResult, Policy, PolicyInfo, PromptInput, SamplingOptions } from '../core/policy.js';
import { parsedJson } from '../core/shape.js';

/** The `format` field of a policy recording (`recordingPolicy`'s `recording()`, read by `replayPolicy`). */
export const RECORDING_FORMAT = 'webgrpo.recording';

/** The parts of a request that decide its output. */
export type RecordedRequest = PromptInput & SamplingOptions & Pick<GenerateGroupOptions, 'groupSize' | 'maxNewTokens'>;

export interface PolicyRecording {
  format: typeof RECORDING_FORMAT;
  version: 1;
  policy: PolicyInfo;
  calls: Array<{ request: RecordedRequest; result: GroupResult }>;
  encodes: Array<{ text: string; ids: number[] }>;
}

export interface RecordingPolicy extends Policy {
  /** Everything recorded so far (a copy; JSON-serialisable). */
  recording(): PolicyRecording;
}

function requestOf(options: GenerateGroupOptions): RecordedRequest {
  const request: RecordedRequest = { groupSize: options.groupSize, maxNewTokens: options.maxNewTokens };
  if (options.prompt !== undefined) request.prompt = options.prompt;
  if (options.messages !== undefined) request.messages = options.messages.map((m) => ({ role: m.role, content: m.content }));
  for (const key of ['temperature', 'topK', 'topP', 'minP', 'seed'] as const) {
    if (options[key] !== undefined) request[key] = options[key];
  }
  if (options.stop !== undefined) request.stop = [...options.stop];
  return request;
}

/** Canonical JSON (keys sorted) of a request: its identity for replay. */
export function requestKey(request: RecordedRequest): string {
  return JSON.stringify(request, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

/** Wraps `inner`, passing every call through and keeping what `generateGroup` and `encode` return. */
export function recordingPolicy(inner: Policy): RecordingPolicy {
  const calls: PolicyRecording['calls'] = [];
  const encodes = new Map<string, number[]>();
  const policy: RecordingPolicy = {
    info: inner.info,
    async generateGroup(options) {
      const result = await inner.generateGroup(options);
      // An aborted group is not a real answer to the request: do not keep it.
      if (!options.signal?.aborted && !result.completions.some((c) => c.finishReason === 'abort')) {
        calls.push({ request: requestOf(options), result: structuredClone(result) });
      }
      return result;
    },
    dispose: () => inner.dispose(),
    recording: () =>
      structuredClone({
        format: RECORDING_FORMAT,
        version: 1,
        policy: inner.info,
        calls,
        encodes: [...encodes].map(([text, ids]) => ({ text, ids })),
      }),
  };
  if (inner.encode) {
    const encode = inner.encode.bind(inner);
    policy.encode = async (text) => {
      const ids = await encode(text);
      encodes.set(text, [...ids]);
      return ids;
    };
  }
  if (inner.scoreCompletions) policy.scoreCompletions = inner.scoreCompletions.bind(inner);
  return policy;
}

export interface ReplayOptions {
  /** Wait this long before each answer, as a model would (for demos and kill tests). Default 0. */
  delayMs?: number;
}

/**
 * A policy that answers from a recording (the object, or its JSON text). A request that was never
 * recorded throws `NotFoundError`: the run has diverged from the recording. A request recorded
 * several times gets the recorded answers in turn, the last one repeating.
 */
export function replayPolicy(recording: PolicyRecording | string, options: ReplayOptions = {}): Policy {
  const data = readRecording(recording);
  const answers = new Map<string, { results: GroupResult[]; next: number }>();
  for (const call of data.calls) {
    const key = requestKey(call.request);
    const entry = answers.get(key) ?? { results: [], next: 0 };
    entry.results.push(call.result);
    answers.set(key, entry);
  }
  const encodes = new Map(data.encodes.map((e) => [e.text, e.ids]));
  const delay = options.delayMs ?? 0;

  const policy: Policy = {
    info: { model: data.policy.model, backend: 'recorded', note: `replaying ${data.calls.length} recorded groups of ${data.policy.backend}` },
    async generateGroup(request) {
      throwIfAborted(request.signal);
      if (delay > 0) await sleep(delay, request.signal);
      const entry = answers.get(requestKey(requestOf(request)));
      if (!entry) {
        const text = request.prompt ?? request.messages?.at(-1)?.content ?? '';
        throw new NotFoundError(
          `No recorded output for this request (seed ${request.seed}, prompt starting "${text.slice(0, 60)}"); ` +
            'the run has diverged from the recording (different options, dataset or library).',
        );
      }
      const result = structuredClone(entry.results[Math.min(entry.next, entry.results.length - 1)]);
      entry.next += 1;
      if (request.onToken) {
        result.completions.forEach((c, row) => c.tokenIds.forEach((tokenId, t) => request.onToken?.({ row, tokenId, logprob: c.logprobs[t] })));
      }
      return result;
    },
    async dispose() {
      answers.clear();
    },
  };
  if (data.encodes.length > 0) {
    policy.encode = async (text) => {
      const ids = encodes.get(text);
      if (!ids) throw new NotFoundError(`No recorded tokenization of "${text.slice(0, 60)}"; the run has diverged from the recording.`);
      return [...ids];
    };
  }
  return policy;
}

function readRecording(input: PolicyRecording | string): PolicyRecording {
  const value = parsedJson(input, 'recording');
  const data = value as Partial<PolicyRecording> | null;
  if (!data || data.format !== RECORDING_FORMAT) throw new InvalidInputError('recording', `expected a "${RECORDING_FORMAT}" document.`);
  if (data.version !== 1) throw new InvalidInputError('recording.version', `expected 1, got ${String(data.version)}.`);
  if (!data.policy || typeof data.policy.model !== 'string') throw new InvalidInputError('recording.policy', 'expected { model, backend }.');
  if (!Array.isArray(data.calls)) throw new InvalidInputError('recording.calls', 'expected an array.');
  data.calls.forEach((call, i) => {
    if (!call || typeof call.request !== 'object' || !call.result || !Array.isArray(call.result.completions)) {
      throw new InvalidInputError(`recording.calls[${i}]`, 'expected { request, result: { completions, ... } }.');
    }
  });
  if (data.encodes !== undefined && !Array.isArray(data.encodes)) throw new InvalidInputError('recording.encodes', 'expected an array.');
  return { ...(data as PolicyRecording), encodes: data.encodes ?? [] };
}

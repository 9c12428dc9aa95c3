/**
 * Worker side of the worker transport: `exposePolicy(policy)` (or a factory that loads one, with
 * progress) answers `createWorkerPolicy` calls from the main thread.
 *
 *   // policy.worker.ts
 *   import { exposePolicy } from 'webgrpo';
 *   import { loadOnnxPolicy } from 'webgrpo/onnx';
 *   exposePolicy((init, { onProgress }) => loadOnnxPolicy({ ...(init as object), onProgress }));
 */
import { AbortError, WebgrpoError } from '../errors.js';
import type { Policy } from '../core/policy.js';
import { packGroup, packScore, serializeError, unpackRows, type FromWorker, type InitResult, type ToWorker } from './protocol.js';

export type PolicyFactory = (init: unknown, context: { onProgress: (progress: unknown) => void }) => Policy | Promise<Policy>;

/** The part of a worker's global scope this needs (a DedicatedWorkerGlobalScope, or a MessagePort). */
export interface WorkerScope {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: 'message', listener: (event: MessageEvent) => void): void;
}

/** Answers `createWorkerPolicy` calls from the main thread in this worker: with a policy, or a factory that loads one from the main thread's init and reports its progress. */
export function exposePolicy(source: Policy | PolicyFactory, scope: WorkerScope = globalThis as unknown as WorkerScope): void {
  let policy: Policy | null = null;
  const running = new Map<number, AbortController>();
  const post = (message: FromWorker, transfer: Transferable[] = []) => scope.postMessage(message, transfer);

  async function handle(message: ToWorker): Promise<void> {
    const { id } = message;
    if (message.type === 'abort') {
      running.get(message.target)?.abort();
      return;
    }
    const controller = new AbortController();
    running.set(id, controller);
    try {
      if (message.type === 'init') {
        policy = typeof source === 'function' ? await source(message.init, { onProgress: (progress) => post({ id, type: 'progress', progress }) }) : source;
        const result: InitResult = {
          info: { ...policy.info },
          can: { scoreCompletions: !!policy.scoreCompletions, encode: !!policy.encode, decode: !!policy.decode, renderPrompt: !!policy.renderPrompt },
        };
        post({ id, type: 'result', value: result });
        return;
      }
      if (!policy) throw new WebgrpoError('ModelLoad', 'The worker has no policy yet: createWorkerPolicy sends init first.');
      switch (message.type) {
        case 'generateGroup': {
          const { streamTokens, ...options } = message.options;
          const group = await policy.generateGroup({
            ...options,
            signal: controller.signal,
            ...(streamTokens ? { onToken: (event) => post({ id, type: 'token', event }) } : {}),
          });
          const { value, transfer } = packGroup(group);
          post({ id, type: 'result', value }, transfer);
          return;
        }
        case 'scoreCompletions': {
          if (!policy.scoreCompletions) throw new WebgrpoError('Unsupported', 'This policy cannot score completions.');
          const { completions, ...options } = message.options;
          const score = await policy.scoreCompletions({ ...options, completions: unpackRows(completions), signal: controller.signal });
          const { value, transfer } = packScore(score);
          post({ id, type: 'result', value }, transfer);
          return;
        }
        case 'encode': {
          if (!policy.encode) throw new WebgrpoError('Unsupported', 'This policy has no tokenizer to encode with.');
          const ids = Int32Array.from(await policy.encode(message.text));
          post({ id, type: 'result', value: ids }, [ids.buffer]);
          return;
        }
        case 'decode': {
          if (!policy.decode) throw new WebgrpoError('Unsupported', 'This policy has no tokenizer to decode with.');
          post({ id, type: 'result', value: await policy.decode(message.tokenIds, message.options) });
          return;
        }
        case 'renderPrompt': {
          if (!policy.renderPrompt) throw new WebgrpoError('Unsupported', 'This policy cannot render prompts.');
          post({ id, type: 'result', value: await policy.renderPrompt(message.input) });
          return;
        }
        case 'dispose':
          for (const other of running.values()) other.abort();
          await policy.dispose();
          policy = null;
          post({ id, type: 'result', value: null });
          return;
      }
    } catch (error) {
      post({ id, type: 'error', error: serializeError(controller.signal.aborted && !(error instanceof WebgrpoError) ? new AbortError() : error) });
    } finally {
      running.delete(id);
    }
  }

  scope.addEventListener('message', (event: MessageEvent) => {
    void handle(event.data as ToWorker);
  });
}

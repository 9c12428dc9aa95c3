/**
 * The worker's side of gradient runs (see gradient-protocol.ts): a run's loop, trainer and store
 * live here, next to the policy they train. `serveGradientRuns` listens for runs on the worker's
 * scope and hands back the scope `exposePolicy` should use, which no longer sees them.
 */
import { InvalidInputError, type Store, type WorkerScope } from '../../lib/index.js';
import type { GradientEvent, GradientRun } from '../../lib/grad.js';
import type { OnnxPolicy } from '../../lib/onnx.js';
import { isTrainMessage, type FromTrainer, type ToTrainer, type TrainRequest } from './gradient-protocol.js';
import { watchedGenerate, type GroupStream } from './streaming.js';
import { rewardsOf } from './tasks.js';

export interface GradientServeOptions {
  /** Where runs are kept. Default: the IndexedDB store the page reads (`openIdbStore()`). */
  openStore?: () => Promise<Store>;
}

export function serveGradientRuns(getPolicy: () => OnnxPolicy | null, scope: WorkerScope, options: GradientServeOptions = {}): WorkerScope {
  let store: Promise<Store> | undefined;
  const openStore = () => (store ??= options.openStore?.() ?? import('../../lib/idb.js').then(({ openIdbStore }) => openIdbStore()));
  scope.addEventListener('message', (event) => {
    if (isTrainMessage(event.data)) serveRun(event.data.request, event.data.port, getPolicy, openStore);
  });
  return {
    postMessage: (message, transfer) => scope.postMessage(message, transfer),
    addEventListener: (type, listener) =>
      scope.addEventListener(type, (event) => {
        if (!isTrainMessage(event.data)) listener(event);
      }),
  };
}

function serveRun(request: TrainRequest, port: MessagePort, getPolicy: () => OnnxPolicy | null, openStore: () => Promise<Store>): void {
  const controller = new AbortController();
  const post = (message: FromTrainer) => port.postMessage(message);

  const ready = (async () => {
    const policy = getPolicy();
    if (!policy?.head) throw new InvalidInputError('policy', 'has no trainable head: the worker must load the model with hiddenState: true.');
    const [{ gradientGrpo, resumeGradientGrpo }, store] = await Promise.all([import('../../lib/grad.js'), openStore()]);
    const handles = {
      policy: watched(policy, (stream) => post({ type: 'stream', stream })),
      rewards: rewardsOf({ ...(request.task ? { task: request.task } : {}), rewards: request.rewards }),
      store,
      signal: controller.signal,
    };
    const run: GradientRun =
      request.kind === 'start'
        ? gradientGrpo({ ...request.settings, ...handles, dataset: request.dataset, runId: request.runId, ...(request.task ? { task: request.task } : {}) })
        : resumeGradientGrpo(request.runId, handles);
    return { run, events: run[Symbol.asyncIterator]() };
  })();
  ready.catch(() => undefined); // reported on the first pull

  const finish = async (run: GradientRun) => {
    // The trainer stays on the policy after a run; take it off, so the next run starts from the base model.
    (await run.result()).trainer.dispose();
    post({ type: 'end' });
    port.close();
  };

  port.onmessage = async (event: MessageEvent<ToTrainer>) => {
    const message = event.data;
    if (message.type === 'cancel') {
      controller.abort();
      return;
    }
    try {
      const { run, events } = await ready;
      if (message.type === 'stop') {
        await events.return?.();
        await run.result().then(({ trainer }) => trainer.dispose(), () => undefined);
        port.close();
        return;
      }
      const next: IteratorResult<GradientEvent> = await events.next();
      if (next.done) await finish(run);
      else post({ type: 'event', event: next.value });
    } catch (error) {
      const e = error instanceof Error ? error : new Error(String(error));
      post({ type: 'error', error: { name: e.name, message: e.message, ...('code' in e && typeof e.code === 'string' ? { code: e.code } : {}) } });
      port.close();
    }
  };
}

/** The same policy (its head, info, scoring), whose groups are reported as they are written. */
function watched(policy: OnnxPolicy, onUpdate: (stream: GroupStream | null) => void): OnnxPolicy {
  const generate = watchedGenerate(policy.generateGroup.bind(policy), (ids) => policy.decode(ids), onUpdate);
  return new Proxy(policy, { get: (target, key, receiver) => (key === 'generateGroup' ? generate : Reflect.get(target, key, receiver)) });
}

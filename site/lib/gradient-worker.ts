/**
 * The worker's side of gradient and LoRA runs (see gradient-protocol.ts): a run's loop, trainer
 * and store live here, next to the policy they train, served by the worker transport's run protocol
 * (`exposeRuns`). `serveGradientRuns` hands back the scope `exposePolicy` should use, which no
 * longer sees the runs.
 */
import { exposeRuns, InvalidInputError, type Completion, type Store, type WorkerScope } from '../../lib/index.js';
import type { GradientRun, LoraRun } from '../../lib/grad.js';
import type { OnnxPolicy } from '../../lib/onnx.js';
import type { GradientSettings, LoraSettings, TrainRequest } from './gradient-protocol.js';
import { watchedGenerate, type GroupStream } from './streaming.js';
import { HUMAN_REWARD, rewardsOf } from './tasks.js';
import { isRatingMessage, WorkerRatings } from './worker-ratings.js';

export interface GradientServeOptions {
  /** Where runs are kept. Default: the IndexedDB store the page reads (`openIdbStore()`). */
  openStore?: () => Promise<Store>;
}

export function serveGradientRuns(getPolicy: () => OnnxPolicy | null, scope: WorkerScope, options: GradientServeOptions = {}): WorkerScope {
  let store: Promise<Store> | undefined;
  const openStore = () => (store ??= options.openStore?.() ?? import('../../lib/idb.js').then(({ openIdbStore }) => openIdbStore()));
  // The person's ratings of runs with the "You" reward, posted by the page as they are given.
  const ratings = new WorkerRatings();
  const runs = exposeRuns(scope, async (message, { signal, report }) => {
    const request = message as TrainRequest;
    const policy = getPolicy();
    if (!policy?.head) throw new InvalidInputError('policy', 'has no trainable head: the worker must load the model with hiddenState: true.');
    const [grad, runsStore] = await Promise.all([import('../../lib/grad.js'), openStore()]);
    const handles = {
      policy: watched(policy, (stream) => report(stream)),
      rewards: rewardsOf({ ...(request.task ? { task: request.task } : {}), rewards: request.rewards }, { [HUMAN_REWARD]: ratings.reward(signal) }),
      store: runsStore,
      signal,
    };
    // A group's completions are named as they go out to the page, before the loop scores them.
    const named = (events: AsyncIterator<unknown>): AsyncIterator<unknown> => ({
      next: async () => {
        const next = await events.next();
        const event = next.value as { type?: string; step: number; item: number; completions: Completion[] } | undefined;
        if (!next.done && event?.type === 'rollouts') ratings.name(request.runId, event.step, event.item, event.completions);
        return next;
      },
      return: async () => (await events.return?.()) ?? { done: true, value: undefined },
    });
    const task = request.task ? { task: request.task } : {};
    if (request.method === 'lora') {
      const run: LoraRun =
        request.kind === 'start' ? grad.loraGrpo({ ...(request.settings as LoraSettings), ...handles, dataset: request.dataset, runId: request.runId, ...task }) : grad.resumeLoraGrpo(request.runId, handles);
      // The policy samples from the adapted weights after a run; put the base model back, so the next run starts from it,
      // and free the trainer's WebGPU weights (when it trained there).
      const release = () =>
        run.result().then(async ({ trainer }) => {
          trainer.dispose();
          await policy.replaceGraph((await policy.modelGraph()).graph);
        }, () => undefined);
      return { events: named(run[Symbol.asyncIterator]()), finish: release, stop: release };
    }
    const run: GradientRun =
      request.kind === 'start'
        ? grad.gradientGrpo({ ...(request.settings as GradientSettings), ...handles, dataset: request.dataset, runId: request.runId, ...task })
        : grad.resumeGradientGrpo(request.runId, handles);
    // The trainer stays on the policy after a run; take it off, so the next run starts from the base model.
    const release = () => run.result().then(({ trainer }) => trainer.dispose(), () => undefined);
    return { events: named(run[Symbol.asyncIterator]()), finish: release, stop: release };
  });
  return {
    postMessage: (message, transfer) => runs.postMessage(message, transfer),
    addEventListener: (type, listener) =>
      runs.addEventListener(type, (event) => {
        if (isRatingMessage(event.data)) ratings.receive(event.data);
        else listener(event);
      }),
  };
}

/** The same policy (its head, info, scoring), whose groups are reported as they are written. */
function watched(policy: OnnxPolicy, onUpdate: (stream: GroupStream | null) => void): OnnxPolicy {
  const generate = watchedGenerate(policy.generateGroup.bind(policy), (ids) => policy.decode(ids), onUpdate);
  return new Proxy(policy, { get: (target, key, receiver) => (key === 'generateGroup' ? generate : Reflect.get(target, key, receiver)) });
}

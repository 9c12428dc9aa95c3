/**
 * GRPO routing as a method of the driver (lib/run/driver.ts). Per step: every completion of an
 * item's group is routed to an arm by a `GrpoRouter` for the item's query class and sampled with
 * that arm's prompt and temperature; the driver rewards the group, and each scorable reward is a
 * router sample. At the step's end the router is updated and committed with the step.
 *
 * `resumeRouterGrpo(runId)` continues from the first unfinished item with the router of the last
 * committed step (the finished items' samples handed to it again). Each item's routing draws from
 * its own seed, so a resumed run ends with the same router as an uninterrupted one.
 */
import { InvalidInputError } from '../../errors.js';
import { armPrompt } from '../../route/arm.js';
import { itemResultGroup } from '../../run/groups.js';
import { promptOf } from '../../run/rollout.js';
import { mulberry32, type Rng } from '../../math/random.js';
import { MemoryStore } from '../../store/memory.js';
import type { RouterConfig, StepRouting } from './record.js';
import type { Store } from '../../store/types.js';
import { ROUTER_RECORD } from './record.js';
import { validateDataset } from '../../core/dataset.js';
import { resumeRun, startRun } from '../../run/driver.js';
import type { Method } from '../../run/method.js';
import { checkRunId, validateHandles } from '../../run/options.js';
import { newRunRecord, type Run } from '../../run/run.js';
import { stepStats } from '../../run/stats.js';
import { GrpoRouter, type GrpoRouterState } from '../../route/router.js';
import type { RouterEvent } from './events.js';
import { observe, queryClassOf, routeItem, servedArm } from './item.js';
import { resolveRouterConfig, type RouterGrpoOptions, type RouterHandles } from './options.js';

export interface RouterResult {
  runId: string;
  status: 'completed' | 'aborted';
  epochsCompleted: number;
  stepsCompleted: number;
  itemsProcessed: number;
  /** The router as it stands at the end (`GrpoRouter.fromJSON(router)` routes with it). */
  router: GrpoRouterState;
  /** `probabilities[queryClass][armId]` at the end. */
  probabilities: Record<string, Record<string, number>>;
}

/** A run in progress: iterate it for events (once), or await `result()`. */
export type RouterRun = Run<RouterEvent, RouterResult>;

interface RouterState {
  config: RouterConfig;
  router: GrpoRouter;
  armIds: string[];
  /** Restarts the router's random stream (per item). */
  reseed(seed: number): void;
}

export const routerMethod: Method<'router', RouterState, RouterHandles, RouterResult> = {
  kind: 'router',
  resumeWith: 'resumeRouterGrpo',
  record: ROUTER_RECORD,
  start: (options) => routerGrpo(options as unknown as RouterGrpoOptions),
  resume: (runId, handles) => resumeRouterGrpo(runId, handles),
  validateHandles,
  advantages: () => ({ scaleRewards: 'group' }),

  async open({ run, last }) {
    const { config } = run;
    // The router draws from `draw`, which routeItem reseeds per item.
    let draw: Rng = mulberry32(config.seed);
    const seeded = { rng: () => draw() };
    const router = last ? GrpoRouter.fromJSON(last.payload.routing.state, seeded) : new GrpoRouter({ ...config.router, ...seeded });
    return { config, router, armIds: config.arms.map((a) => a.id), reseed: (seed) => (draw = mulberry32(seed)) };
  },
  sample: (state, ctx, prepared) => routeItem(state.config, state.router, state.reseed, ctx, prepared),
  // The held-out evaluation samples the routed policy: each item with the arm the router serves its class.
  evaluationPrompt: async (state, item) => armPrompt(promptOf(item), servedArm(state.config, state.router, queryClassOf(promptOf(item)))),
  evaluationTemperature: (state, item, temperature) => temperature * (servedArm(state.config, state.router, queryClassOf(promptOf(item))).temperatureScale ?? 1),
  // Later items of the step route with these samples counted, resumed or not.
  rewarded: (state, result) => observe(state.router, result),
  async finishStep({ router, armIds }) {
    const stats = router.update();
    const routing: StepRouting = { state: router.toJSON(), probabilities: routingProbabilities(router, armIds), stats };
    return { payload: { kind: 'router', routing }, end: { routing } };
  },
  exportGroups: (config, runId, result) =>
    config.arms.flatMap((arm) => {
      const rows = result.rollouts.flatMap((rollout, row) => (rollout.arm === arm.id ? [row] : []));
      return rows.length ? [itemResultGroup(runId, result, armPrompt(result.prompt, arm), rows)] : [];
    }),
  epochEnd: (_state, epoch, steps) => ({ stats: { epoch, steps: steps.length, ...stepStats(steps.flatMap((s) => s.items)) } }),
  result: async ({ router, armIds }, { runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
    runId,
    status,
    epochsCompleted,
    stepsCompleted,
    itemsProcessed,
    router: router.toJSON(),
    probabilities: routingProbabilities(router, armIds),
  }),
};

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function routerGrpo(options: RouterGrpoOptions): RouterRun {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const config = resolveRouterConfig(options);
  const dataset = validateDataset(options.dataset);
  const runId = options.runId !== undefined ? checkRunId(options.runId) : crypto.randomUUID();
  const run = newRunRecord('router', runId, config, dataset.length);
  return startRun(routerMethod, run, dataset, options, options.store ?? new MemoryStore());
}

/**
 * Continues a stored router run from its first unfinished item, with the router of its last
 * committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeRouterGrpo(runId: string, options: RouterHandles & { store: Store }): RouterRun {
  return resumeRun(routerMethod, runId, options);
}

/** `probabilities[queryClass][armId]` for every class the router has samples of. */
export function routingProbabilities(router: GrpoRouter, armIds: readonly string[]): Record<string, Record<string, number>> {
  const { sampleCounts } = router.toJSON();
  return Object.fromEntries(
    Object.keys(sampleCounts).map((queryClass) => {
      const probabilities = router.probabilities(queryClass, armIds);
      return [queryClass, Object.fromEntries(armIds.map((id, i) => [id, probabilities[i]]))];
    }),
  );
}

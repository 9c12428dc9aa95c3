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
import { armPrompt } from './arm.js';
import { itemResultGroup } from '../../run/groups.js';
import { promptOf } from '../../run/rollout.js';
import { mulberry32, type Rng } from '../../math/random.js';
import type { RouterConfig, StepRouting } from './record.js';
import type { Store } from '../../store/store.js';
import { ROUTER_RECORD } from './record.js';
import type { DatasetItem } from '../../core/dataset.js';
import { resumeRun, startNewRun } from '../../run/driver.js';
import type { Method, NewRun } from '../../run/method.js';
import { validateHandles } from '../../run/options.js';
import type { Run } from '../../run/run.js';
import { GrpoRouter, type GrpoRouterState } from './router.js';
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

export const routerMethod: Method<{ kind: 'router'; handles: RouterHandles; result: RouterResult; options: RouterGrpoOptions }> = {
  kind: 'router',
  record: ROUTER_RECORD,
  create: createRouterRun,
  validateHandles,

  async open({ run, store, last }) {
    const { config } = run;
    const armIds = config.arms.map((a) => a.id);
    // The router draws from `draw`, which routeItem reseeds per item.
    let draw: Rng = mulberry32(config.seed);
    const seeded = { rng: () => draw() };
    const reseed = (seed: number) => (draw = mulberry32(seed));
    const router = last ? GrpoRouter.fromJSON(last.payload.routing.state, seeded) : new GrpoRouter({ ...config.router, ...seeded });
    // A resumed step's finished items (a prefix of its batch: the router works on one item at a
    // time) are counted again, as they were before the later items were routed.
    for (const result of await store.getItemResults(run.id, (last?.step ?? 0) + 1)) observe(router, result);
    const served = (item: DatasetItem) => servedArm(config, router, queryClassOf(promptOf(item)));
    return {
      // Each item's group is routed; later items of the step route with its samples counted.
      sample: (ctx, prepared) => routeItem(config, router, reseed, ctx, prepared, (result) => observe(router, result)),
      // The held-out evaluation samples the routed policy: each item with the arm the router serves its class.
      heldOut: {
        prompt: async (item) => armPrompt(promptOf(item), served(item)),
        temperature: (item, temperature) => temperature * (served(item).temperatureScale ?? 1),
      },
      async finishStep() {
        const stats = router.update();
        const routing: StepRouting = { state: router.toJSON(), probabilities: routingProbabilities(router, armIds), stats };
        return { payload: { kind: 'router', routing }, end: { routing } };
      },
      result: async ({ runId, status, epochsCompleted, stepsCompleted, itemsProcessed }) => ({
        runId,
        status,
        epochsCompleted,
        stepsCompleted,
        itemsProcessed,
        router: router.toJSON(),
        probabilities: routingProbabilities(router, armIds),
      }),
    };
  },
  exportGroups: (config, runId, result) =>
    config.arms.flatMap((arm) => {
      const rows = result.rollouts.flatMap((rollout, row) => (rollout.arm === arm.id ? [row] : []));
      return rows.length ? [itemResultGroup(runId, result, armPrompt(result.prompt, arm), rows)] : [];
    }),
};

/** A new router run: its stored config, from the start options (checked here). */
function createRouterRun(options: RouterGrpoOptions): NewRun<RouterConfig> {
  return { config: resolveRouterConfig(options) };
}

/** Starts a new run. Options are validated here, synchronously; the loop starts when iterated. */
export function routerGrpo(options: RouterGrpoOptions): RouterRun {
  return startNewRun(routerMethod, options, createRouterRun(options));
}

/**
 * Continues a stored router run from its first unfinished item, with the router of its last
 * committed step. Pass the same policy (model) and reward functions (by name).
 */
export function resumeRouterGrpo(runId: string, options: RouterHandles & { store: Store }): RouterRun {
  return resumeRun([routerMethod], runId, options);
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

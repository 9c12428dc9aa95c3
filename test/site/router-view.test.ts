/**
 * The router panels' plain modules on a real router run of the toy policy on the alphabetise task:
 * the routing series per query class, the router table after a step, and the run's title.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore, routerGrpo, type RouterConfig, type RunBundle } from '../../lib/index.js';
import { alphabetise } from '../../lib/tasks/index.js';
import { payloadOf } from '../../lib/method.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';
import { PLAYGROUND_ARMS } from '../../site/lib/arms.js';
import { choiceOf } from '../../site/lib/methods.js';
import { coolerServedNote, favouriteArms, routerAfter, routingSeries } from '../../site/lib/router-view.js';
import { epochRows, runTitle } from '../../site/lib/view.js';

let bundle: RunBundle;
let config: RouterConfig;

beforeAll(async () => {
  const store = new MemoryStore();
  const run = routerGrpo({
    policy: createToyPolicy(),
    dataset: alphabetise.dataset({ size: 4 }),
    rewards: alphabetise.rewards,
    arms: [...PLAYGROUND_ARMS],
    task: 'alphabetise',
    store,
    groupSize: 4,
    epochs: 2,
    batchSize: 2,
    maxNewTokens: 8,
    router: { minSamples: 2 },
  });
  await run.result();
  bundle = await store.readBundle(run.runId);
  if (bundle.run.kind !== 'router') throw new Error('expected a router run');
  config = bundle.run.config;
});

describe('router view', () => {
  it('is the method the stored run names, and titles it so', () => {
    expect(runTitle(bundle.run)).toBe('alphabetise · router');
    expect(choiceOf('router').id).toBe('router');
  });

  it('gives each query class one line per arm with a point per committed step', () => {
    const series = routingSeries(bundle, config);
    expect(series.length).toBeGreaterThan(0);
    for (const s of series) {
      expect(s.step).toEqual([1, 2, 3, 4]);
      expect(s.probabilities).toHaveLength(PLAYGROUND_ARMS.length);
      const last = s.probabilities.map((p) => p.at(-1) as number);
      expect(last.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
    }
  });

  it('tabulates the router after a step: weights, probabilities, and rewarded completions per arm', () => {
    const after = routerAfter(bundle, config, 4)!;
    expect(after.step).toBe(4);
    const { state } = payloadOf(bundle.steps[3], 'router')!.routing;
    for (const row of after.rows) {
      expect(row.samples).toBe(state.sampleCounts[row.queryClass]);
      // Every rewarded completion of the class was written by one arm.
      expect(row.cells.reduce((n, c) => n + c.samples, 0)).toBe(row.samples);
      row.cells.forEach((cell, i) => expect(cell.weight).toBe(state.weights[config.arms[i].id]?.[row.queryClass] ?? 0));
    }
    // A step in progress shows the router it routes with: the last committed one's.
    expect(routerAfter(bundle, config, 5)?.step).toBe(4);
    expect(routerAfter({ ...bundle, steps: [] }, config, 1)).toBeNull();
  });

  it('names each epoch’s most likely arm per class', () => {
    const rows = epochRows(bundle);
    expect(rows).toHaveLength(2);
    const favourites = favouriteArms(rows[1].routing!, config);
    expect(favourites.length).toBe(Object.keys(rows[1].routing!.probabilities).length);
    expect(favourites[0]).toMatch(/^\w+: (As asked|Terse|Cool|Hot) \d+%$/);
  });

  it('says when the router serves a cooler variant held out, so a rise at the run’s temperature is that, and nothing otherwise', () => {
    // The last committed step's router, with one class's most likely arm set to each variant in turn.
    const serving = (probabilities: Record<string, number>): RunBundle => {
      const last = bundle.steps.at(-1)!;
      const { routing } = payloadOf(last, 'router')!;
      const queryClass = Object.keys(routing.probabilities)[0];
      const payload = { kind: 'router', routing: { ...routing, probabilities: { [queryClass]: probabilities } } };
      return { ...bundle, steps: [...bundle.steps.slice(0, -1), { ...last, payload } as typeof last] };
    };
    const cool = coolerServedNote(serving({ asked: 0.1, terse: 0.1, cool: 0.7, hot: 0.1 }), config);
    expect(cool).toMatch(/^The router lowered the temperature: held out it serves each kind of question its most likely variant \(\S+: Cool, temperature × 0\.5, 70% of its replies in training\), so these answers are sampled cooler than the run’s temperature 1\./);
    expect(cool).toContain('no weights changed');
    expect(coolerServedNote(serving({ asked: 0.4, terse: 0.1, cool: 0.3, hot: 0.2 }), config)).toBeNull();
    expect(coolerServedNote(serving({ asked: 0.1, terse: 0.1, cool: 0.1, hot: 0.7 }), config)).toBeNull();
    expect(coolerServedNote({ ...bundle, steps: [] }, config)).toBeNull();
  });
});

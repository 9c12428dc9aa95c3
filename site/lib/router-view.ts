/**
 * What the router panels draw, from a stored router run: each query class's arm probabilities over
 * the committed steps (the routing charts), and the router after a step as a table of query class ×
 * arm (weight, probability, rewarded completions so far). Pure functions of plain data.
 */
import type { RouterConfig, RunBundle, StepRouting } from '../../lib/index.js';
import { queryClassOf } from '../../lib/method.js';
import { stepView } from './step-payload.js';

/** One query class's probability per arm after each committed step (null before the class was seen). */
export interface ClassSeries {
  queryClass: string;
  step: number[];
  /** By arm, in the run's arm order. */
  probabilities: Array<Array<number | null>>;
}

/** The query classes the router knows after the last committed step, in order of first appearance. */
function classesOf(bundle: RunBundle): string[] {
  const seen = new Set<string>();
  for (const step of bundle.steps) for (const queryClass of Object.keys(stepView(step).routing?.probabilities ?? {})) seen.add(queryClass);
  return [...seen];
}

export function routingSeries(bundle: RunBundle, config: RouterConfig): ClassSeries[] {
  const step = bundle.steps.map((s) => s.step);
  return classesOf(bundle).map((queryClass) => ({
    queryClass,
    step,
    probabilities: config.arms.map((arm) => bundle.steps.map((s) => stepView(s).routing?.probabilities[queryClass]?.[arm.id] ?? null)),
  }));
}

export interface RouterCell {
  weight: number;
  probability: number;
  /** Rewarded completions this arm wrote for this class, up to the step. */
  samples: number;
}

export interface RouterRow {
  queryClass: string;
  /** Rewarded completions of the class up to the step (the router routes by weight from `minSamples`). */
  samples: number;
  /** By arm, in the run's arm order. */
  cells: RouterCell[];
}

/** The router after committed step `step` (the latest one before it when `step` is in progress), or null before the first. */
export function routerAfter(bundle: RunBundle, config: RouterConfig, step: number): { step: number; rows: RouterRow[] } | null {
  const committed = bundle.steps.filter((s) => s.step <= step && stepView(s).routing);
  const last = committed.at(-1);
  const routing = last && stepView(last).routing;
  if (!routing) return null;
  const { state, probabilities } = routing;
  const counts = new Map<string, number>();
  const key = (queryClass: string, arm: string) => `${queryClass}\u0000${arm}`;
  for (const s of committed) {
    for (const result of s.items) {
      const queryClass = queryClassOf(result.prompt);
      for (const r of result.rollouts) if (r.reward !== null && r.arm) counts.set(key(queryClass, r.arm), (counts.get(key(queryClass, r.arm)) ?? 0) + 1);
    }
  }
  const rows = Object.keys(probabilities).map((queryClass) => ({
    queryClass,
    samples: state.sampleCounts[queryClass] ?? 0,
    cells: config.arms.map((arm) => ({
      weight: state.weights[arm.id]?.[queryClass] ?? 0,
      probability: probabilities[queryClass][arm.id] ?? 0,
      samples: counts.get(key(queryClass, arm.id)) ?? 0,
    })),
  }));
  return { step: last.step, rows };
}

/** Each query class's most likely arm after a step, as "class: label 62%". */
export function favouriteArms(routing: StepRouting, config: RouterConfig): string[] {
  return Object.entries(routing.probabilities).map(([queryClass, byArm]) => {
    const best = config.arms.reduce((a, b) => ((byArm[b.id] ?? 0) > (byArm[a.id] ?? 0) ? b : a));
    return `${queryClass}: ${best.label} ${Math.round((byArm[best.id] ?? 0) * 100)}%`;
  });
}

/**
 * Where the router serves a kind of question a variant that lowers the temperature (Cool): its
 * held-out answers "at temperature T" are then sampled cooler, so their rise is the lower
 * temperature, closer to the greedy replies the unchanged model already writes, not a better
 * model. The held-out evaluation serves each class the arm it gives the highest probability
 * (servedArm); this reads the router after the last committed step. Null where no class is served one.
 */
export function coolerServedNote(bundle: RunBundle, config: RouterConfig): string | null {
  const routing = bundle.steps.map((s) => stepView(s).routing).filter((r) => r !== undefined && r !== null).at(-1);
  if (!routing) return null;
  const cooled: string[] = [];
  for (const [queryClass, byArm] of Object.entries(routing.probabilities)) {
    // The first of the highest, as servedArm picks on a tie.
    const served = config.arms.reduce((a, b) => ((byArm[b.id] ?? 0) > (byArm[a.id] ?? 0) ? b : a));
    if ((served.temperatureScale ?? 1) < 1) cooled.push(`${queryClass}: ${served.label}, temperature × ${served.temperatureScale}, ${Math.round((byArm[served.id] ?? 0) * 100)}% of its replies in training`);
  }
  if (cooled.length === 0) return null;
  return `The router lowered the temperature: held out it serves each kind of question its most likely variant (${cooled.join('; ')}), so these answers are sampled cooler than the run’s temperature ${config.temperature}. Their rise is the lower temperature, closer to what the unchanged model writes greedily, not a better model: no weights changed, and the greedy row shows what the model itself does.`;
}

/**
 * What a router run tells its caller, in the same shape as the other loops' events
 * (lib/run/events.ts): the same progress object and per-item events, each item's routing (which
 * arm every completion went to, and the item's query class), and the router after each step in
 * `step-end`.
 */
import type { PromptInput } from '../../core/policy.js';
import type { ItemResult, StepStats } from '../../store/records/index.js';
import type { RouterConfig, StepRouting } from './record.js';
import type { EvalEvent, ItemRef, Progress, RolloutEvent, RunEnd, StepRef } from '../../run/events.js';

export type RouterEvent =
  | { type: 'run-start'; runId: string; resumed: boolean; config: RouterConfig; progress: Progress }
  | (StepRef & { type: 'step-start'; batch: number; items: number[]; progress: Progress })
  | (ItemRef & { type: 'item-start'; position: number; prompt: PromptInput })
  /** The arm of every completion of the item's group, in row order, before sampling. */
  | (ItemRef & { type: 'routed'; queryClass: string; arms: string[] })
  | RolloutEvent
  | (ItemRef & { type: 'item-end'; result: ItemResult; reused: boolean; progress: Progress })
  | (StepRef & { type: 'step-end'; batch: number; stats: StepStats; routing: StepRouting; progress: Progress })
  | { type: 'epoch-end'; epoch: number; stats: RouterEpochStats; progress: Progress }
  | EvalEvent
  | RunEnd;

/** The rewards of an epoch's steps. */
export interface RouterEpochStats extends StepStats {
  epoch: number;
  steps: number;
}

export type RouterEventType = RouterEvent['type'];

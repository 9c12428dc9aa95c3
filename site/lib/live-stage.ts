/**
 * What a running loop is doing, in words, from its latest event: the line under the progress bar.
 * Pure: the run's record says which method is running (and the group size a prompt is sampled with).
 */
import type { RunRecord } from '../../lib/index.js';
import { kindView } from './kind-view.js';
import type { PlaygroundEvent } from './methods.js';
import { HUMAN_REWARD } from './tasks.js';

/** The stage after `event`, or null when the event does not change it. */
export function stageAfter(event: PlaygroundEvent, run: RunRecord | undefined): string | null {
  switch (event.type) {
    case 'run-start':
      return event.config.evaluation && event.progress.itemsDone === 0 ? 'Answering the held-out prompts before training' : event.resumed ? 'Resumed' : 'Started';
    case 'epoch-end':
      return run?.config.evaluation ? `Epoch ${event.epoch} done: answering the held-out prompts` : null;
    case 'eval':
      return event.epoch === 0 ? 'Held-out answers of the base model kept' : `Held-out answers after epoch ${event.epoch} kept`;
    case 'step-start':
      return `Step ${event.step}: ${event.items.length} prompt${event.items.length === 1 ? '' : 's'}`;
    case 'item-start':
      return `Sampling a group of ${run?.config.groupSize ?? ''} completions for prompt #${event.item + 1}`;
    case 'rollouts':
      return run?.config.rewards.some((r) => r.name === HUMAN_REWARD)
        ? `Waiting for your ratings of prompt #${event.item + 1}`
        : `Scoring the group of prompt #${event.item + 1}`;
    case 'routed': {
      const variants = new Set(event.arms).size;
      return `Prompt #${event.item + 1} (${event.queryClass}): sampling ${event.arms.length} completions across ${variants} variant${variants === 1 ? '' : 's'}`;
    }
    case 'advantages':
      return afterAdvantages(event.item, event.zeroSpread, run);
    case 'summaries':
      return `The critic is comparing better and worse completions of prompt #${event.item + 1}`;
    case 'critique':
      return `The critic is checking its lessons for prompt #${event.item + 1} against the library`;
    case 'operations':
      return `Updating the library after step ${event.step}`;
    case 'train': {
      const { loss, kl } = event.metrics;
      return `Step ${event.step}: adapter update ${event.iteration} of ${event.iterations} (loss ${loss.toFixed(4)}${kl === undefined ? '' : `, KL ${kl.toFixed(4)}`})`;
    }
    case 'run-end':
      return event.status;
    default:
      return null;
  }
}

/** What the loop does with a group once its advantages are known. */
function afterAdvantages(item: number, zeroSpread: boolean, run: RunRecord | undefined): string {
  const view = kindView(run);
  if (zeroSpread && !view.learnsFromFlatGroups) return `Prompt #${item + 1}: every completion scored the same, nothing to learn`;
  return view.afterAdvantages(run, item);
}

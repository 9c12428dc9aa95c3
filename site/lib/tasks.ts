/**
 * Where a run's items and rewards come from: a built-in task (its own generator and verifiable
 * rewards), or a JSONL file the user uploads, scored by a reward they pick.
 */
import { InvalidInputError, type DatasetItem, type RewardFunction, type TrainingFreeConfig } from '../../lib/index.js';
import { builtinRewards, builtinTasks, parseDatasetJsonl, skillTasks, type SkillTask, type Task } from '../../lib/tasks.js';

export interface UploadedDataset {
  fileName: string;
  items: DatasetItem[];
  /** Its plain prompts were turned into user messages (asConversational) after the upload. */
  templated?: boolean;
}

export const BUILTIN_TASKS = Object.values(builtinTasks);

/** The tasks the bundled skill model was pretrained on, with a held-out split (lib/tasks/skill.ts). */
export const SKILL_TASK_NAMES: readonly string[] = skillTasks.map((t) => t.name);

/** The task as a skill task (one that draws from a training or a held-out split), or undefined. */
export function skillTaskOf(task: Pick<Task, 'dataset'>): SkillTask | undefined {
  return skillTasks.find((t) => t === task);
}

/** The name of the reward a person gives by rating completions (human-reward.svelte.ts). */
export const HUMAN_REWARD = 'you';

/** Rewards for an uploaded dataset: a short name for the picker, and what it scores. */
export const UPLOAD_REWARDS: ReadonlyArray<{ name: string; label: string; detail: string }> = [
  { name: 'similarity', label: 'similarity', detail: 'edit-distance closeness to the answer, from 0 to 1' },
  { name: 'exact', label: 'exact', detail: '1 if the reply equals the answer' },
  { name: 'contains', label: 'contains', detail: '1 if the reply contains the answer' },
  { name: 'number', label: 'number', detail: '1 if the last number in the reply equals the answer' },
  { name: 'json', label: 'json', detail: '1 if the reply is valid JSON (no answer needed)' },
];

export async function readDatasetFile(file: File): Promise<UploadedDataset> {
  return { fileName: file.name, items: parseDatasetJsonl(await file.text(), file.name) };
}

/**
 * The reward functions a stored run was started with (matched by name on resume): the task's own
 * when the run used them, else each by name, `extra` (the "You" reward) first.
 */
export function rewardsOf(config: Pick<TrainingFreeConfig, 'task' | 'rewards'>, extra: Record<string, RewardFunction> = {}): RewardFunction[] {
  const task = config.task ? builtinTasks[config.task] : undefined;
  const names = config.rewards.map((r) => r.name).join(',');
  if (task && task.rewards.map((r) => r.name).join(',') === names) return task.rewards;
  return config.rewards.map(({ name, weight }) => {
    const reward = extra[name] ?? builtinRewards[name];
    if (!reward) throw new InvalidInputError('rewards', `this run uses a reward "${name}" the playground does not know.`);
    return { ...reward, weight };
  });
}

/** How many items give a plain `prompt` (TRL's standard form), which a chat model reads without its template. */
export function rawPromptCount(items: readonly DatasetItem[]): number {
  return items.filter((item) => item.messages === undefined).length;
}

/**
 * The items in TRL's conversational form: each plain `prompt` becomes one user message, which the
 * model's chat template then wraps as it was trained to read. Items with messages stay as they are.
 */
export function asConversational(items: readonly DatasetItem[]): DatasetItem[] {
  return items.map(({ prompt, ...rest }) => (prompt === undefined ? rest : { ...rest, messages: [{ role: 'user' as const, content: prompt }] }));
}

/** A one-line label of a prompt (its last user message). */
export function promptLabel(item: { prompt?: string; messages?: ReadonlyArray<{ role: string; content: string }> }): string {
  const text = item.prompt ?? [...(item.messages ?? [])].reverse().find((m) => m.role === 'user')?.content ?? '';
  return text.replace(/\s+/g, ' ').trim();
}

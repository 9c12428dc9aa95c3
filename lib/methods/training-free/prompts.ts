/**
 * The critic's prompts, in our own words. Each is a `{{placeholder}}` template that callers may
 * replace through `templates` (the replacements are stored with the run, so a resume asks the same
 * questions). The four stages follow the paper: a summary per rollout, a group critique that
 * contrasts better and worse attempts, a group update against the library, and one batch merge.
 */
import { DEFAULT_EXEMPLARS_TEMPLATE, DEFAULT_LESSONS_TEMPLATE } from '../../experience/render.js';
import type { LoopMode, PromptTemplates } from './record.js';

const CRITIC_SYSTEM = [
  'You review attempts at tasks and distil short, general lessons that help later attempts succeed.',
  'Be concrete and brief, and follow the requested reply format exactly.',
].join(' ');

/** Placeholders: task, reference, reward, attempt. */
const SUMMARY = `Here is one attempt at a task. Summarise it in at most five short sentences: what the attempt did, where it went right or wrong, and why it earned its reward.

Task:
{{task}}

Reference answer: {{reference}}
Reward of this attempt (higher is better): {{reward}}

Attempt:
{{attempt}}

Reply with the summary as plain text.`;

/** Placeholders: task, reference, attempts, experiences, max_lessons. */
const CRITIQUE = `Several attempts at the same task were scored. Compare the better attempts with the worse ones and work out what made the difference.

Task:
{{task}}

Reference answer: {{reference}}

The attempts, each summarised, with its reward (higher is better):
{{attempts}}

Lessons already in the library:
{{experiences}}

Propose at most {{max_lessons}} new lessons that would help a later attempt at tasks like this one. Each lesson is one sentence: general (not tied to this task's particular values) and actionable. Do not repeat a lesson the library already has.

Think it through first, then give the lessons as a JSON array of strings inside <lessons></lessons> tags, for example:
<lessons>["Check the answer against the required format before replying."]</lessons>
Reply <lessons>[]</lessons> if there is nothing new to learn.`;

/** Placeholders: experiences, lessons. */
const GROUP_UPDATE = `Decide how each proposed lesson changes the experience library.

Current library:
{{experiences}}

Proposed lessons:
{{lessons}}

For each proposed lesson choose one operation:
- ADD: it is new; add it as it is or reworded.
- UPDATE: it refines or corrects an existing entry; give that entry's id and one sentence that combines both.
- DELETE: it shows that an existing entry is wrong; give that entry's id.
- NONE: the library already covers it.

Reply with a JSON array inside <operations></operations> tags, for example:
<operations>[{"operation": "ADD", "content": "..."}, {"operation": "UPDATE", "id": "G2", "content": "..."}, {"operation": "NONE"}]</operations>`;

/** Placeholders: experiences, operations. */
const BATCH_MERGE = `Several reviewers proposed edits to the experience library at the same time. Merge them into one consistent list of operations.

Current library:
{{experiences}}

Proposed operations:
{{operations}}

Rules: operations that say the same thing become one; two ADDs that overlap become one lesson that covers both; of conflicting edits to one entry keep the better-supported one; every lesson stays one general, actionable sentence; leave out NONE.

Reply with the final JSON array of operations (ADD with content; UPDATE with id and content; DELETE with id) inside <operations></operations> tags.`;

/** Placeholders: problem, format. */
const REPAIR = `Your previous reply could not be used: {{problem}}
Reply again with only {{format}} and nothing else.`;

/** Our prompt templates for a mode (the task prompt, and the critic's summary, critique, group update, batch merge, repair and system prompts): a start for `templates` overrides. */
export function defaultTemplates(mode: LoopMode): PromptTemplates {
  return {
    prompt: mode === 'exemplars' ? DEFAULT_EXEMPLARS_TEMPLATE : DEFAULT_LESSONS_TEMPLATE,
    summary: SUMMARY,
    critique: CRITIQUE,
    groupUpdate: GROUP_UPDATE,
    batchMerge: BATCH_MERGE,
    repair: REPAIR,
    criticSystem: CRITIC_SYSTEM,
  };
}

/** Placeholders each template must keep, or the critic would be asked about nothing. */
export const REQUIRED_PLACEHOLDERS: Record<keyof PromptTemplates, string[]> = {
  prompt: ['experiences', 'prompt'],
  summary: ['attempt'],
  critique: ['attempts'],
  groupUpdate: ['lessons'],
  batchMerge: ['operations'],
  repair: [],
  criticSystem: [],
};

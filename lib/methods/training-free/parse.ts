/**
 * Reading structured data out of critic replies, which are untrusted free text. The JSON is looked
 * for inside `<tag>...</tag>`, then inside a code fence, then as the whole reply, then as the first
 * balanced array or object; reasoning blocks (`<think>...</think>`) are ignored. Every failure is a
 * reason string, never an exception: the caller decides whether to ask again or skip.
 */
import { normalizeOperations } from '../../experience/operations.js';
import type { ExperienceOperation } from '../../experience/types.js';

/** `notes`: parts of an otherwise usable reply that were dropped (kept as warnings). */
export type Parsed<T> = { ok: true; value: T; notes?: string[] } | { ok: false; problem: string };

export function extractJson(text: string, tag: string): Parsed<unknown> {
  const visible = text.replace(/<think>[\s\S]*?<\/think>/gi, '').replace(/<think>[\s\S]*$/i, '');
  const candidates: string[] = [];
  const tagged = [...visible.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'gi'))];
  if (tagged.length) candidates.push(tagged[tagged.length - 1][1]);
  const fences = [...visible.matchAll(/```(?:json)?\s*\n?([\s\S]*?)```/gi)];
  if (fences.length) candidates.push(fences[fences.length - 1][1]);
  candidates.push(visible);
  const balanced = firstBalanced(visible);
  if (balanced !== undefined) candidates.push(balanced);

  let firstError = '';
  for (const candidate of candidates) {
    let inner = candidate.trim();
    // A fence inside the tags: <lessons>```json [...] ```</lessons>.
    const fenced = /^```(?:json)?\s*([\s\S]*?)```$/i.exec(inner);
    if (fenced) inner = fenced[1].trim();
    if (inner === '') continue;
    try {
      return { ok: true, value: JSON.parse(inner) };
    } catch (error) {
      firstError ||= (error as Error).message;
    }
  }
  if (visible.trim() === '') return { ok: false, problem: 'the reply was empty.' };
  return {
    ok: false,
    problem: tagged.length
      ? `the text inside <${tag}> is not valid JSON (${firstError}).`
      : `no <${tag}>...</${tag}> block with JSON was found.`,
  };
}

/** The first `[...]` or `{...}` with balanced brackets (strings respected), if any. */
function firstBalanced(text: string): string | undefined {
  const start = text.search(/[[{]/);
  if (start < 0) return undefined;
  const stack: string[] = [];
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '[' || ch === '{') stack.push(ch === '[' ? ']' : '}');
    else if (ch === ']' || ch === '}') {
      if (stack.pop() !== ch) return undefined;
      if (stack.length === 0) return text.slice(start, i + 1);
    }
  }
  return undefined;
}

/** A list of lesson strings (objects with a `content`/`text`/`lesson`/`experience` string allowed). */
export function parseLessons(text: string): Parsed<string[]> {
  const json = extractJson(text, 'lessons');
  if (!json.ok) return json;
  let value = json.value;
  if (isRecord(value) && Array.isArray(value.lessons)) value = value.lessons;
  if (!Array.isArray(value)) return { ok: false, problem: 'expected a JSON array of lesson strings.' };
  const lessons: string[] = [];
  for (const [i, entry] of value.entries()) {
    const lesson = typeof entry === 'string' ? entry : isRecord(entry) ? (entry.content ?? entry.text ?? entry.lesson ?? entry.experience) : undefined;
    if (typeof lesson !== 'string') return { ok: false, problem: `lesson ${i + 1} is not a string.` };
    if (lesson.trim() !== '') lessons.push(lesson);
  }
  return { ok: true, value: lessons };
}

/**
 * A list of operations. Individual malformed operations are kept here and reported later by
 * `applyOperations`; only a reply that is not a list at all, or where no entry is an operation,
 * counts as unparsable.
 */
export function parseOperations(text: string): Parsed<ExperienceOperation[]> {
  const json = extractJson(text, 'operations');
  if (!json.ok) return json;
  let value = json.value;
  if (isRecord(value) && Array.isArray(value.operations)) value = value.operations;
  if (isRecord(value) && ('operation' in value || 'option' in value)) value = [value];
  if (!Array.isArray(value)) return { ok: false, problem: 'expected a JSON array of operations.' };
  const { operations, skipped } = normalizeOperations(value);
  if (value.length > 0 && operations.length === 0) {
    return { ok: false, problem: `no entry is a valid operation (${skipped[0]?.reason ?? 'unknown'}).` };
  }
  const notes = skipped.map((s) => `operation ${s.index + 1} ignored: ${s.reason}`);
  return { ok: true, value: operations.map((o) => o.operation), ...(notes.length ? { notes } : {}) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

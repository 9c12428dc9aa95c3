/** Small text measures shared by the reward functions. */

/** Levenshtein distance with two rows; inputs are capped at `cap` characters to bound the cost. */
export function editDistance(a: string, b: string, cap = 2000): number {
  const s = a.slice(0, cap);
  const t = b.slice(0, cap);
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  let current = new Array<number>(t.length + 1);
  for (let i = 1; i <= s.length; i++) {
    current[0] = i;
    for (let j = 1; j <= t.length; j++) {
      const substitution = previous[j - 1] + (s[i - 1] === t[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, substitution);
    }
    [previous, current] = [current, previous];
  }
  return previous[t.length];
}

/** 1 - edit distance / longer length: 1 for equal texts, 0 for nothing in common. */
export function similarity(a: string, b: string): number {
  const longer = Math.max(a.length, b.length);
  return longer === 0 ? 1 : 1 - editDistance(a, b) / longer;
}

/** Whitespace collapsed, trimmed. */
export function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The last integer or decimal number in a text, if any. */
export function lastNumber(text: string): number | undefined {
  const matches = text.match(/-?\d+(?:\.\d+)?/g);
  return matches ? Number(matches[matches.length - 1]) : undefined;
}

/** The JSON value a reply holds: the whole reply, or the body of a code fence. */
export function parseJsonReply(text: string): { ok: true; value: unknown; bare: boolean } | { ok: false } {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)```$/i.exec(trimmed);
  try {
    return { ok: true, value: JSON.parse(fenced ? fenced[1] : trimmed), bare: !fenced };
  } catch {
    return { ok: false };
  }
}

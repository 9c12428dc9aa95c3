/** "1 exemplar", "0 exemplars", "2 lessons": a count and its noun in agreement (English -s plurals). */
export function plural(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}

/**
 * Runs doc examples one after another in this process (`tsx run-examples.ts results.json a.ts b.ts …`,
 * from the folder they were written to), so the runtime and the library load once. Each example's
 * console.log lines are kept apart, and what it threw; results.json gets them all.
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format } from 'node:util';

export interface ExampleResult {
  name: string;
  printed: string[];
  error?: string;
  ms: number;
}

const [out, ...names] = process.argv.slice(2);
const results: ExampleResult[] = [];
const log = console.log;
for (const name of names) {
  const printed: string[] = [];
  console.log = (...args: unknown[]) => void printed.push(...format(...args).split('\n'));
  const start = performance.now();
  try {
    await import(pathToFileURL(resolve(name)).href);
    results.push({ name, printed, ms: performance.now() - start });
  } catch (error) {
    results.push({ name, printed, error: error instanceof Error ? (error.stack ?? error.message) : String(error), ms: performance.now() - start });
  }
}
console.log = log;
await writeFile(out, JSON.stringify(results));
// An example may leave a policy or a timer open; its output is in, so the process ends here.
process.exit(0);

/**
 * Benchmark runner: `npm run bench` runs every suite, `npm run bench -- math onnx` the named ones.
 *
 * A suite is a module `scripts/bench/<suite>.ts` exporting `run(): Promise<string>` that returns
 * a Markdown section (its own `## heading`, tables, notes). Files starting with `_` are shared
 * helpers, not suites. Each suite's output replaces its block in BENCHMARKS.md, between
 * `<!-- bench:<suite> -->` and `<!-- /bench:<suite> -->` (appended when missing), stamped with the
 * command, date and machine, so suites can be re-run independently.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const file = fileURLToPath(new URL('../../BENCHMARKS.md', import.meta.url));
const header = `# Benchmarks

Measured side by side with the obvious alternative in one run. \`npm run bench\` runs every suite;
\`npm run bench -- <suite>\` re-runs one and replaces only its section below.
`;

async function suites(): Promise<string[]> {
  const names = (await readdir(here)).filter((f) => f.endsWith('.ts') && f !== 'index.ts' && !f.startsWith('_'));
  return names.map((f) => f.slice(0, -3)).sort();
}

function stamp(suite: string): string {
  const cpu = cpus();
  const date = new Date().toISOString().slice(0, 10);
  // The load average says how much other work shared the machine while it was measured.
  const load = loadavg()[0].toFixed(1);
  return `_\`npm run bench -- ${suite}\` on ${date}; Node ${process.version}, ${cpu[0]?.model.trim() ?? 'unknown CPU'} (${cpu.length} cores, load ${load} at the end)._`;
}

/** Replaces (or appends) the marked block of `suite` in the document. */
export function replaceSection(doc: string, suite: string, body: string): string {
  const open = `<!-- bench:${suite} -->`;
  const close = `<!-- /bench:${suite} -->`;
  const block = `${open}\n${body.trim()}\n\n${stamp(suite)}\n${close}`;
  const start = doc.indexOf(open);
  const end = doc.indexOf(close);
  if (start >= 0 && end > start) return doc.slice(0, start) + block + doc.slice(end + close.length);
  return `${doc.trimEnd()}\n\n${block}\n`;
}

async function main(argv: string[]): Promise<void> {
  const available = await suites();
  const chosen = argv.length > 0 ? argv : available;
  const unknown = chosen.filter((s) => !available.includes(s));
  if (unknown.length > 0) {
    throw new Error(`Unknown bench suite(s): ${unknown.join(', ')}. Available: ${available.join(', ')}.`);
  }
  let doc: string;
  try {
    doc = await readFile(file, 'utf8');
  } catch {
    doc = header;
  }
  for (const suite of chosen) {
    console.log(`bench: ${suite}…`);
    const module = (await import(pathToFileURL(`${here}${suite}.ts`).href)) as { run(): Promise<string> };
    const body = await module.run();
    console.log(body);
    doc = replaceSection(doc, suite, body);
    // Written after every suite, so a later failing suite does not lose earlier results.
    await writeFile(file, doc);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});

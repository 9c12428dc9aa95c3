/**
 * Every example a newcomer reads (the README's and the guides' in docs/, test/docs/blocks.ts) is
 * type-checked, strict, against the package's entries as package.json's exports map them to lib/,
 * and run offline in Node on the bundled models and in-memory stores: it must finish without
 * throwing, and a block that says what it prints (`// → …`) must print exactly that. test/pack
 * checks the same blocks against the packed package; this one follows lib/ as it is edited.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { docBlocks, root, type DocBlock } from './blocks.js';
import type { ExampleResult } from './run-examples.js';

const run = promisify(execFile);

/** `webgrpo` and `webgrpo/<entry>` as the package's exports name them, each to its source in lib/. */
async function entryPaths(): Promise<Record<string, string[]>> {
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { exports: Record<string, string | { types?: string }> };
  const paths: Record<string, string[]> = {};
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    const types = typeof target === 'object' ? target.types : undefined;
    if (!types) continue;
    paths[`webgrpo${subpath.slice(1)}`] = [join(root, 'lib', types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts'))];
  }
  return paths;
}

describe('the examples of the README and docs/', () => {
  let dir = '';
  let blocks: DocBlock[] = [];
  const options = { strict: true, noEmit: true, skipLibCheck: true, target: 'es2022', module: 'esnext', moduleResolution: 'bundler', lib: ['es2023', 'dom'], types: ['node'] };

  beforeAll(async () => {
    blocks = await docBlocks();
    // Inside the repository, so node_modules (openai, @types/node) resolve; build/ is ignored by git.
    await mkdir(join(root, 'build'), { recursive: true });
    dir = await mkdtemp(join(root, 'build', 'doc-examples-'));
    for (const { name, code } of blocks) await writeFile(join(dir, name), code);
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...options, paths: await entryPaths() }, files: blocks.map((b) => b.name) }));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("are found: the README's example and the guides' runnable ones", () => {
    expect(blocks.filter((b) => b.file === 'README.md' && b.run)).toHaveLength(1);
    expect(blocks.filter((b) => b.file.startsWith('docs/') && b.run).length).toBeGreaterThan(10);
  });

  it('type-check against the entries, strict', () => {
    const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
    const program = ts.createProgram(config!.fileNames, config!.options);
    // Only the examples' own diagnostics: the checker resolves what they use from lib/ and no more.
    const diagnostics = config!.fileNames.flatMap((file) => {
      const source = program.getSourceFile(file)!;
      return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
    });
    const where = (d: ts.Diagnostic) => {
      const block = blocks.find((b) => d.file && d.file.fileName.endsWith(b.name))!;
      const at = d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line;
      return `${block.file}:${block.line + 1 + at}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    };
    expect(diagnostics.map(where)).toEqual([]);
  }, 60_000);

  it('run offline in Node and print what their comments say they print', async () => {
    const runnable = blocks.filter((b) => b.run);
    const tsx = join(root, 'node_modules/.bin/tsx');
    const runner = relative(dir, join(root, 'test/docs/run-examples.ts'));
    await run(tsx, ['--tsconfig', 'tsconfig.json', runner, 'results.json', ...runnable.map((b) => b.name)], { cwd: dir, maxBuffer: 16 << 20, timeout: 240_000 });
    const results = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8')) as ExampleResult[];
    expect(results.map((r) => r.name)).toEqual(runnable.map((b) => b.name));
    for (const [i, block] of runnable.entries()) {
      const { printed, error } = results[i];
      expect(error, `${block.file}:${block.line}`).toBeUndefined();
      const expected = [...block.code.matchAll(/\/\/ → (.*)$/gm)].map((m) => m[1].trim());
      if (expected.length > 0) expect(printed, `${block.file}:${block.line}`).toEqual(expected);
    }
  }, 300_000);
});

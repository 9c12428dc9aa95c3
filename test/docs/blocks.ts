/**
 * The code a newcomer reads: every ```js and ```ts block of the README and of the guides in docs/,
 * as the module a user would paste it into. A block whose info string says `no-run` (```js no-run)
 * needs what a test has not got (a browser's IndexedDB and served model, a server on a port): it
 * is type-checked all the same.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));

export interface DocBlock {
  /** The markdown file, relative to the repository, and the line its fence opens on. */
  file: string;
  line: number;
  /** A file name for the block's module, unique across the docs. */
  name: string;
  run: boolean;
  code: string;
}

/** The README first, then docs/*.md in name order. */
export async function docFiles(): Promise<string[]> {
  const guides = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).sort();
  return ['README.md', ...guides.map((f) => `docs/${f}`)];
}

export async function docBlocks(): Promise<DocBlock[]> {
  const blocks: DocBlock[] = [];
  for (const file of await docFiles()) {
    const text = await readFile(join(root, file), 'utf8');
    for (const m of text.matchAll(/^ *```(js|ts)( [^\n]*)?\n([\s\S]*?)^ *```/gm)) {
      const line = text.slice(0, m.index).split('\n').length;
      // Blocks in a list are indented with it; `export {}` makes a block without imports a module too.
      const code = `${m[3].replace(/^ {2}/gm, '')}\nexport {};\n`;
      const flags = (m[2] ?? '').trim().split(/\s+/);
      blocks.push({ file, line, name: `${file.replace(/\W+/g, '-')}-line-${line}.ts`, run: !flags.includes('no-run'), code });
    }
  }
  return blocks;
}

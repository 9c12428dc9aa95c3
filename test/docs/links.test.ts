/**
 * What a newcomer follows: the README stays short (at most 300 lines) and links every guide in
 * docs/, and every relative link of the README and the guides reaches a file of the repository,
 * and a heading of it where the link names one (`#anchor`, GitHub's slug of the heading).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { docFiles, root } from './blocks.js';

const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

/** The anchors of a markdown file's headings, code blocks left out (a `# comment` in a shell block is no heading). */
function anchors(text: string): string[] {
  const prose = text.replace(/^ *```[\s\S]*?^ *```/gm, '');
  return [...prose.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1].trim()));
}

describe('the README and the guides', () => {
  it('keep the README to at most 300 lines, linking every guide', async () => {
    const readme = read('README.md');
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    const guides = (await docFiles()).filter((f) => f.startsWith('docs/'));
    expect(guides.filter((guide) => !readme.includes(`](${guide})`) && !readme.includes(`](${guide}#`))).toEqual([]);
  });

  it('link only to files that exist, and to headings those files have', async () => {
    const broken: string[] = [];
    for (const file of await docFiles()) {
      // Links in prose: code blocks may hold anything.
      const text = read(file).replace(/^ *```[\s\S]*?^ *```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue;
        const [path, anchor] = target.split('#');
        const to = path ? relative(root, join(root, dirname(file), path)) : file;
        if (!existsSync(join(root, to))) broken.push(`${file}: ${target} (no ${to})`);
        else if (anchor && to.endsWith('.md') && !anchors(read(to)).includes(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${to})`);
      }
    }
    expect(broken).toEqual([]);
  });
});

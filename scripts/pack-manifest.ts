/**
 * The package.json that ships, written over the repository's for the length of `npm pack` /
 * `npm publish` (`prepack` strips, `postpack` restores). The repository needs two fields a user's
 * install must not see: `prepare` (so `npm ci` here builds dist/; in an installed package it is
 * noise, and npm lists a tarball's `prepare` among the scripts it did not run) and `allowScripts`
 * (npm's policy for this repository's own dependencies, meaningless in a dependency).
 *
 *   tsx scripts/pack-manifest.ts strip     package.json -> the published manifest (original kept aside)
 *   tsx scripts/pack-manifest.ts restore   the original back
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The manifest a user installs: the repository's, less its own install policy and build hook. */
function publishedManifest(manifest: Record<string, unknown>): Record<string, unknown> {
  const scripts: Record<string, string> = { ...(manifest.scripts as Record<string, string> | undefined) };
  delete scripts.prepare;
  const published: Record<string, unknown> = { ...manifest, scripts };
  delete published.allowScripts;
  return published;
}

function main(command: string | undefined, root: string): void {
  const file = join(root, 'package.json');
  const kept = join(root, '.package.json.repository');
  if (command === 'strip') {
    if (existsSync(kept)) throw new Error(`${kept} exists: a previous pack did not restore package.json. Restore it (mv ${kept} ${file}) and pack again.`);
    const text = readFileSync(file, 'utf8');
    writeFileSync(kept, text);
    writeFileSync(file, `${JSON.stringify(publishedManifest(JSON.parse(text) as Record<string, unknown>), null, 2)}\n`);
  } else if (command === 'restore') {
    if (existsSync(kept)) renameSync(kept, file);
  } else {
    throw new Error('Usage: tsx scripts/pack-manifest.ts strip|restore');
  }
}

main(process.argv[2], process.cwd());

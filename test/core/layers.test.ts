/**
 * The shared data types sit at the bottom: lib/core (the policy interface, a dataset item and its
 * check, a reward function) imports nothing but the errors, and the tasks, which are made of those
 * types, import neither the store nor the driver. Read from the sources' import lines (type-only
 * imports included), so a type pulled back up a layer fails here.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const lib = join(dirname(fileURLToPath(import.meta.url)), '../../lib');

/** Every module a folder's files import, as a path under lib/ (`store/records.ts`). */
async function importsOf(folder: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const entry of await readdir(join(lib, folder), { recursive: true })) {
    if (!entry.endsWith('.ts')) continue;
    const file = join(lib, folder, entry);
    const source = await readFile(file, 'utf8');
    const specifiers = [...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*'([^']+)'/gms)].map((m) => m[1]);
    found.set(
      relative(lib, file),
      specifiers.filter((s) => s.startsWith('.')).map((s) => relative(lib, join(dirname(file), s)).replace(/\.js$/, '.ts')),
    );
  }
  return found;
}

function outside(imports: Map<string, string[]>, allowed: (path: string) => boolean): string[] {
  return [...imports].flatMap(([file, targets]) => targets.filter((t) => !allowed(t)).map((t) => `${file} -> ${t}`));
}

describe('the bottom layer', () => {
  it('lib/core imports only itself and the errors', async () => {
    const imports = await importsOf('core');
    expect([...imports.keys()].sort()).toEqual(expect.arrayContaining(['core/dataset.ts', 'core/policy.ts', 'core/reward.ts']));
    expect(outside(imports, (t) => t.startsWith('core/') || t === 'errors.ts')).toEqual([]);
  });

  it('lib/tasks imports neither the store nor the driver, nor anything above them', async () => {
    const imports = await importsOf('tasks');
    expect(imports.size).toBeGreaterThan(5);
    expect(outside(imports, (t) => ['tasks/', 'core/', 'math/'].some((p) => t.startsWith(p)) || t === 'errors.ts')).toEqual([]);
  });
});

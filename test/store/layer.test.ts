/**
 * The store sits below every method: lib/store imports only itself, the shared types, the maths
 * and the errors (type-only imports included), and no method's kind appears in its sources, so a method's
 * runs are read through the `RecordKind` a store is handed and nothing there branches on a kind.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { methodKinds } from '../../lib/methods/registry.js';

const lib = join(dirname(fileURLToPath(import.meta.url)), '../../lib');

async function storeSources(): Promise<Map<string, string>> {
  const sources = new Map<string, string>();
  for (const name of await readdir(join(lib, 'store'), { recursive: true })) {
    if (name.endsWith('.ts')) sources.set(`store/${name}`, await readFile(join(lib, 'store', name), 'utf8'));
  }
  return sources;
}

describe('lib/store', () => {
  it('imports only itself, lib/core, lib/math and the errors', async () => {
    const sources = await storeSources();
    expect(sources.size).toBeGreaterThan(20);
    const outside = [...sources].flatMap(([file, source]) =>
      [...source.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s*'(\.[^']+)'/gms)]
        .map((m) => relative(lib, join(lib, dirname(file), m[1])))
        .filter((target) => !['store/', 'core/', 'math/'].some((layer) => target.startsWith(layer)) && target !== 'errors.js')
        .map((target) => `${file} -> ${target}`),
    );
    expect(outside).toEqual([]);
  });

  it('names no method kind', async () => {
    const kinds = methodKinds();
    expect(kinds).toEqual(expect.arrayContaining(['training-free', 'gradient', 'lora', 'router']));
    const named = [...(await storeSources())].flatMap(([file, source]) =>
      kinds.filter((kind) => new RegExp(`(?<![\\w-])${kind}(?![\\w-])`, 'i').test(source)).map((kind) => `${file}: ${kind}`),
    );
    expect(named).toEqual([]);
  });
});

/**
 * The shared data types sit at the bottom: lib/core (the policy interface, a dataset item and its
 * check, a reward function) imports nothing but the errors, and the tasks, which are made of those
 * types, import neither the store nor the driver. The structured-output engine (lib/constrain) sits
 * below the sampler that uses it, and the decoder's weights (lib/weights) below the LoRA adapter and
 * the engines that train on them. Read from the sources' import lines (type-only
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

describe('the folders named after one idea', () => {
  it('lib/constrain imports only itself, lib/core and the errors: the sampler uses it, never the other way', async () => {
    const imports = await importsOf('constrain');
    expect([...imports.keys()]).toEqual(expect.arrayContaining(['constrain/format.ts', 'constrain/matcher.ts', 'constrain/vocabulary.ts']));
    expect(outside(imports, (t) => t.startsWith('constrain/') || t.startsWith('core/') || t === 'errors.ts')).toEqual([]);
  });

  it('lib/weights imports only itself, the ONNX graph readers and the errors: no adapter, engine or method', async () => {
    const imports = await importsOf('weights');
    expect([...imports.keys()].sort()).toEqual(['weights/decoder.ts', 'weights/read-onnx.ts', 'weights/safetensors.ts']);
    expect(outside(imports, (t) => t.startsWith('weights/') || t.startsWith('policy/onnx/') || t === 'errors.ts')).toEqual([]);
  });

  it("the router's pure parts import neither the driver nor the store", async () => {
    const imports = await importsOf('methods/router');
    const pure = new Map([...imports].filter(([file]) => ['router.ts', 'query-class.ts', 'arm.ts'].some((name) => file === `methods/router/${name}`)));
    expect(pure.size).toBe(3);
    expect(outside(pure, (t) => ['methods/router/', 'core/', 'math/', 'experience/'].some((p) => t.startsWith(p)) || t === 'errors.ts')).toEqual([]);
  });
});

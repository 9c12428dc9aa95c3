/**
 * The store checks a router step's state as plain data: an import refuses exactly the states that
 * `GrpoRouter.fromJSON` refuses, naming the field, and no file of lib/store loads route code at run
 * time (type imports only).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/errors.js';
import { routerGrpo } from '../../lib/methods/router/method.js';
import { GrpoRouter, type GrpoRouterState } from '../../lib/methods/router/router.js';
import { exportRun } from '../../lib/store/run-export.js';
import { MemoryStore } from '../../lib/store/memory/store.js';
import { validateBundle } from '../../lib/method.js';
import { armPolicy, router } from '../fixtures/v5/runs.js';

type State = GrpoRouterState & Record<string, unknown>;
const edits: Array<[string, (state: State) => void, RegExp | null]> = [
  ['as stored', () => undefined, null],
  ['weights a number', (s) => ((s as Record<string, unknown>).weights = 3), /state\.weights/],
  ['a weight a string', (s) => ((Object.values(s.weights)[0] as Record<string, unknown>).q = 'x'), /state\.weights\.\w+\.q/],
  ['version 2', (s) => ((s as Record<string, unknown>).version = 2), /state\.version/],
  ['temperature 0', (s) => (s.temperature = 0), /state\.temperature/],
  ['minSamples 1.5', (s) => (s.minSamples = 1.5), /state\.minSamples/],
  ['minSamples -1', (s) => (s.minSamples = -1), /state\.minSamples/],
  ['learningRate missing', (s) => delete (s as Record<string, unknown>).learningRate, /state\.learningRate/],
  ['totalUpdates NaN', (s) => (s.totalUpdates = Number.NaN), /state\.totalUpdates/],
  ['a sample count a string', (s) => ((s.sampleCounts as Record<string, unknown>).odd = 'x'), /state\.sampleCounts\.odd/],
  ['buffer an object', (s) => ((s as Record<string, unknown>).buffer = {}), /state\.buffer/],
  ['a buffered sample without a model', (s) => s.buffer.push({ queryClass: 'q', reward: 1 } as never), /state\.buffer\[\d+\]\.model/],
  ['an extra field', (s) => (s.note = 'kept'), null],
];

describe('a router step state, checked as data', () => {
  it.each(edits)('%s: refused by the import exactly when GrpoRouter.fromJSON refuses it', async (_name, edit, refused) => {
    const store = new MemoryStore();
    await routerGrpo({ ...router, epochs: 1, policy: armPolicy(), store, runId: 'r' }).result();
    const bundle = structuredClone(await exportRun(store, 'r')) as unknown as { steps: Array<{ payload: { routing: { state: State } } }> };
    edit(bundle.steps[0].payload.routing.state);
    const restore = () => GrpoRouter.fromJSON(structuredClone(bundle.steps[0].payload.routing.state));
    if (refused === null) {
      expect(restore).not.toThrow();
      expect(() => validateBundle(bundle)).not.toThrow();
    } else {
      expect(restore).toThrow(InvalidInputError);
      expect(() => validateBundle(bundle)).toThrow(refused);
    }
  });

  it('lib/store imports route code for types only', async () => {
    const dir = new URL('../../lib/store/', import.meta.url).pathname;
    const runtime: string[] = [];
    for (const name of (await readdir(dir, { recursive: true })).filter((n) => n.endsWith('.ts'))) {
      const text = await readFile(join(dir, name), 'utf8');
      for (const match of text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+'((?:\.\.\/)+route\/[^']+)'/gms)) if (!match[2]) runtime.push(`${name}: ${match[3]}`);
    }
    expect(runtime).toEqual([]);
  });
});

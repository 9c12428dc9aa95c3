/**
 * What a user meets loading a model. Exports whose probes fail by design (onnxruntime-genai's
 * attention, a causal mask built from input_ids) load without onnxruntime printing its red
 * "Non-zero status code ... invalid expand shape" error: onnxruntime logs from native code straight
 * to the process's stderr, so the load runs in a child process and its stderr is read. And the
 * bundled paths are promises that must be awaited: passing one un-awaited is an error that says so.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { bundledModelPath, loadOnnxPolicy, skillModelPath } from '../../lib/onnx.js';
import { buildModel, TINY, type ModelSpec } from '../../scripts/build-model/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SPEC: ModelSpec = { ...TINY, seed: 3, numLayers: 1, maxPositionEmbeddings: 256 };
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-hygiene-'));
  await Promise.all([
    buildModel({ ...SPEC, graph: 'genai' }, join(dir, 'genai')),
    buildModel({ ...SPEC, causalMask: 'input-ids', positionIdsInput: false }, join(dir, 'input-ids')),
  ]);
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('loading exports whose pass probes fail', () => {
  it('prints no onnxruntime error, and reports the passes it found', async () => {
    const child = spawn(join(root, 'node_modules/.bin/tsx'), [join(root, 'test/onnx/fixtures/load-policies.ts'), join(dir, 'genai'), join(dir, 'input-ids')], { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, stderr).toBe(0);
    expect(stderr).not.toMatch(/onnxruntime|Non-zero status|invalid expand shape|GroupQueryAttention/);
    const infos = JSON.parse(stdout) as Array<{ passMode: string }>;
    // The probes did run and fail: both graphs decode with the two transformers.js passes only.
    expect(infos.map((i) => i.passMode)).toEqual(['two-pass', 'two-pass']);
  }, 120_000);
});

describe('the bundled model paths', () => {
  it('resolve to folders loadOnnxPolicy takes once awaited', async () => {
    for (const path of [await bundledModelPath(), await skillModelPath()]) expect(path).toMatch(/public[/\\]models[/\\]webgrpo-(tiny|skill)$/);
  });

  it('are refused un-awaited with an error that says to await them', async () => {
    const error = await loadOnnxPolicy({ model: skillModelPath() as unknown as string }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelLoadError);
    expect((error as Error).message).toMatch(/is a Promise: await it first/);
  });
});

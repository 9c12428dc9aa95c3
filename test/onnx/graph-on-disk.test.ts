/**
 * In Node the sampler's rewritten session (followAdapter, and its rebuild after releaseSession)
 * is built from a graph file whose weights are references into the model's own files, hard-linked
 * into a private temporary folder: it scores bit for bit as the session built from the weights
 * handed over from JavaScript (a host without withGraphOnDisk, as in a browser), the folder is
 * gone once the session is built, and where no folder can be made the policy falls back to the
 * weights in memory with the same scores. The weights the rewrite read to find the projections
 * are collected before that session is built (Node asked for a collection).
 */
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoraAdapter, type LoraAdapter } from '../../lib/lora/adapter.js';
import { mulberry32 } from '../../lib/math/random.js';
import type { OnnxPolicy } from '../../lib/onnx.js';
import { nodeHost } from '../../lib/policy/onnx/host-node.js';
import { loadOnnxPolicyOn } from '../../lib/policy/onnx/load.js';
import type { ModelHost } from '../../lib/policy/onnx/location.js';
import { findDecoder } from '../../lib/policy/onnx/structure/find-decoder.js';
import { readExternalPieces } from '../../lib/policy/onnx/external-data.js';
import type { DecoderWeights } from '../../lib/weights/decoder.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';

let root = '';
let dir = '';
let adapter: LoraAdapter;
const policies: OnnxPolicy[] = [];
/** The folders the disk path handed onnxruntime, to check they are removed. */
const folders: string[] = [];

const recording: ModelHost = {
  ...nodeHost,
  withGraphOnDisk: (env, location, file, graph, create) =>
    nodeHost.withGraphOnDisk!(env, location, file, graph, (path) => {
      folders.push(dirname(path));
      return create(path);
    }),
};
const inMemory: ModelHost = { ...nodeHost, withGraphOnDisk: undefined };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-on-disk-'));
  dir = join(root, 'model');
  // External data: the references the rewrite renames to pieces must point into model.onnx_data again.
  await buildModel({ ...SMALL, externalData: true }, dir);
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const { graph, externalData } = await readExternalPieces(new Uint8Array(await readFile(join(dir, 'onnx/model.onnx'))), async (file, ranges) => {
    const bytes = new Uint8Array(await readFile(join(dir, 'onnx', file)));
    return ranges.map((r) => bytes.slice(r.offset, r.offset + r.length));
  });
  expect(Object.keys(externalData).length).toBeGreaterThan(0);
  const weights = findDecoder(graph, { config, externalData }) as DecoderWeights;
  adapter = createLoraAdapter(weights.shape, { r: 4, alpha: 8, seed: 5 });
  const rng = mulberry32(6);
  for (const layer of adapter.layers) for (const pair of Object.values(layer)) for (let i = 0; i < pair.B.length; i++) pair.B[i] = (2 * rng() - 1) * 0.3;
});
afterAll(async () => {
  await Promise.all(policies.map((p) => p.dispose()));
  if (root) await rm(root, { recursive: true, force: true });
});

async function scoresUnder(host: ModelHost): Promise<{ followed: number[][]; rebuilt: number[][]; base: number[][] }> {
  const policy = await loadOnnxPolicyOn(host, { model: dir });
  policies.push(policy);
  const prompt = 'On disk';
  const completions = [[5, 6, 7, 8], [9, 10]];
  const base = (await policy.scoreCompletions({ prompt, completions })).logprobs;
  await policy.followAdapter(adapter);
  const followed = (await policy.scoreCompletions({ prompt, completions })).logprobs;
  // Taking turns: released, then built again by the next pass.
  await policy.releaseSession();
  const rebuilt = (await policy.scoreCompletions({ prompt, completions })).logprobs;
  return { followed, rebuilt, base };
}

const exists = (path: string) => access(path).then(() => true, () => false);

describe('the sampler session built from the files on disk', () => {
  it('scores as the session built from the weights in memory, and leaves no temporary folder', async () => {
    const fromMemory = await scoresUnder(inMemory);
    const fromDisk = await scoresUnder(recording);
    // The first follow and the rebuild after releaseSession both went through the disk.
    expect(folders.length).toBe(2);
    expect(fromDisk).toEqual(fromMemory);
    expect(fromDisk.followed).not.toEqual(fromDisk.base);
    expect(fromDisk.rebuilt).toEqual(fromDisk.followed);
    for (const folder of folders) expect(await exists(folder)).toBe(false);
    // The model's own files are untouched (links removed, not their targets).
    expect(await exists(join(dir, 'onnx/model.onnx_data'))).toBe(true);
  });

  it("builds the followed adapter's session once the weights the rewrite read are collected", async () => {
    // Every piece of weights the host reads is watched; the rewrite reads them only to find the projections.
    const pieces: Array<WeakRef<Uint8Array>> = [];
    const atBuild: Array<{ read: number; alive: number }> = [];
    const watching: ModelHost = {
      ...nodeHost,
      readRanges: async (env, location, file, ranges) => {
        const read = await nodeHost.readRanges(env, location, file, ranges);
        pieces.push(...read.map((piece) => new WeakRef(piece)));
        return read;
      },
      withGraphOnDisk: (env, location, file, graph, create) =>
        nodeHost.withGraphOnDisk!(env, location, file, graph, (path) => {
          atBuild.push({ read: pieces.length, alive: pieces.filter((p) => p.deref() !== undefined).length });
          return create(path);
        }),
    };
    const policy = await loadOnnxPolicyOn(watching, { model: dir });
    policies.push(policy);
    await policy.followAdapter(adapter);
    expect(atBuild).toHaveLength(1);
    expect(atBuild[0].read).toBeGreaterThan(0);
    expect(atBuild[0].alive).toBe(0);
  });

  it('falls back to the weights in memory where no temporary folder can be made', async () => {
    const expected = await scoresUnder(inMemory);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = join(root, 'missing', 'tmp');
    const before = folders.length;
    try {
      expect(await scoresUnder(recording)).toEqual(expected);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(folders.length).toBe(before);
  });
});

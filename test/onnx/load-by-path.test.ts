/**
 * Loading a local folder in Node, transformers.js is kept from streaming the model's graph and
 * external data files into memory beside onnxruntime reading them from their paths (its
 * FileResponse starts reading a file whole as it is made, and nobody reads that stream): the
 * Node host's load opens no read stream on them, where the same load without it opens one on
 * each; both score the same log-probs, and transformers.js' cache settings are as before.
 */
import fs from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OnnxPolicy } from '../../lib/onnx.js';
import { nodeHost } from '../../lib/policy/onnx/host-node.js';
import { loadOnnxPolicyOn } from '../../lib/policy/onnx/load.js';
import type { ModelHost } from '../../lib/policy/onnx/location.js';
import { buildModel } from '../../scripts/build-model/index.js';
import { SMALL } from '../train/exports.js';

let root = '';
let other = '';
const policies: OnnxPolicy[] = [];
const streamed: string[] = [];
const createReadStream = fs.createReadStream;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'webgrpo-load-by-path-'));
  await buildModel({ ...SMALL, names: 'exporter', externalData: true }, root);
  // Another model beside it (other weights, the same file names), to load at the same time.
  other = join(root, 'other');
  await buildModel({ ...SMALL, seed: 11, names: 'exporter', externalData: true }, other);
  fs.createReadStream = ((path: fs.PathLike, ...rest: unknown[]) => {
    streamed.push(String(path));
    return (createReadStream as (...args: unknown[]) => fs.ReadStream)(path, ...rest);
  }) as typeof fs.createReadStream;
});
afterAll(async () => {
  fs.createReadStream = createReadStream;
  for (const p of policies) await p.dispose();
  if (root) await rm(root, { recursive: true, force: true });
});

async function load(host: ModelHost) {
  streamed.length = 0;
  const policy = await loadOnnxPolicyOn(host, { model: root });
  policies.push(policy);
  return { policy, graphStreams: streamed.filter((path) => /\.onnx(_data)?$/.test(path)) };
}

describe("loading a local folder in Node", () => {
  it("opens no read stream on the graph or its external data, and scores as the load that does", async () => {
    const transformers = await import('@huggingface/transformers');
    const before = { useCustomCache: transformers.env.useCustomCache, customCache: transformers.env.customCache };
    const byPath = await load(nodeHost);
    expect(byPath.graphStreams).toEqual([]);
    expect({ useCustomCache: transformers.env.useCustomCache, customCache: transformers.env.customCache }).toEqual(before);
    // The same load left to transformers.js alone streams both files.
    const streaming = await load({ ...nodeHost, loadingModel: undefined });
    expect(streaming.graphStreams.map((path) => path.slice(root.length + 1)).sort()).toEqual(['onnx/model.onnx', 'onnx/model.onnx_data']);
    const request = { prompt: 'x', completions: [[5, 9, 2, 7]] };
    const scores = async (policy: OnnxPolicy) => (await policy.scoreCompletions(request)).logprobs;
    expect(await scores(byPath.policy)).toEqual(await scores(streaming.policy));
    // Two folders loading at once each get their own graph (the second, meeting the first's cache, loads as transformers.js alone would).
    const alone = await loadOnnxPolicyOn(nodeHost, { model: other });
    policies.push(alone);
    const both = await Promise.all([loadOnnxPolicyOn(nodeHost, { model: root }), loadOnnxPolicyOn(nodeHost, { model: other })]);
    policies.push(...both);
    expect(await scores(both[0])).toEqual(await scores(byPath.policy));
    expect(await scores(both[1])).toEqual(await scores(alone));
    expect(await scores(alone)).not.toEqual(await scores(byPath.policy));
  });
});

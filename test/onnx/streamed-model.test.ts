/**
 * The cache hook a page's model load runs under (streamed-model.ts), over real HTTP on 127.0.0.1
 * with transformers.js' own `env`: overlapping loads each get their own model file's graph and
 * weights, every other request goes to the cache the user had, and the user's settings are back
 * once the last load ends. In a page, with onnxruntime-web: streamed-model-browser.test.ts.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { env } from '@huggingface/transformers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamedExternalData, withStreamedModel, type CacheEnv } from '../../lib/policy/onnx/streamed-model.js';
import { TINY_DIR } from './fixtures.js';

const FILE = 'onnx/model.onnx';
let bytes: Uint8Array;
let server: Server;
let base: string;
beforeAll(async () => {
  bytes = new Uint8Array(await readFile(join(TINY_DIR, FILE)));
  server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(bytes.length) });
    response.end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('withStreamedModel', () => {
  it("answers each overlapping load's model file with its own graph, chains the rest to the user's cache, and restores it", async () => {
    const cacheEnv = env as unknown as CacheEnv;
    const before = { useCustomCache: cacheEnv.useCustomCache, customCache: cacheEnv.customCache, useFSCache: cacheEnv.useFSCache };
    const asked: string[] = [];
    const own = { match: async (request: string) => void asked.push(request), put: async () => undefined };
    Object.assign(cacheEnv, { useCustomCache: true, customCache: own, useFSCache: false });
    try {
      const graphOf = async (folder: string) => {
        const response = (await cacheEnv.customCache!.match(`${base}/${folder}/${FILE}`)) as Response;
        return new Uint8Array(await response.arrayBuffer());
      };
      const [a, b] = await Promise.all(
        ['a', 'b'].map((folder) =>
          withStreamedModel(cacheEnv, { id: `${base}/${folder}`, local: true }, async () => {
            const graph = await graphOf(folder);
            // Asked again (transformers.js checking before it stores), the file goes on to the user's cache.
            await cacheEnv.customCache!.match(`${base}/${folder}/${FILE}`);
            await cacheEnv.customCache!.match(`${base}/${folder}/config.json`);
            return { graph, data: streamedExternalData(graph) };
          }),
        ),
      );
      for (const { graph, data } of [a, b]) {
        expect(graph.length).toBeLessThan(bytes.length / 4);
        expect(data!.length).toBeGreaterThan(5);
        // Each piece an array of its own, its bytes the file's.
        expect(data!.every(({ data: piece }) => piece.byteOffset === 0 && piece.byteLength === piece.buffer.byteLength)).toBe(true);
      }
      // The two loads' pieces have names of their own.
      expect(a.data!.map((d) => d.path).filter((path) => b.data!.some((d) => d.path === path))).toEqual([]);
      expect(streamedExternalData(a.graph)).toBeUndefined();
      expect(asked.sort()).toEqual([`${base}/a/${FILE}`, `${base}/a/config.json`, `${base}/b/${FILE}`, `${base}/b/config.json`].sort());
      expect(cacheEnv.customCache).toBe(own);
      expect(cacheEnv.useCustomCache).toBe(true);
    } finally {
      Object.assign(cacheEnv, before);
    }
  });

  it('stands aside where transformers.js would use a file system cache', async () => {
    const cacheEnv = env as unknown as CacheEnv;
    const before = { useCustomCache: cacheEnv.useCustomCache, customCache: cacheEnv.customCache, useFSCache: cacheEnv.useFSCache };
    Object.assign(cacheEnv, { useCustomCache: false, useFSCache: true });
    try {
      const seen = await withStreamedModel(cacheEnv, { id: `${base}/a`, local: true }, async () => ({ custom: cacheEnv.useCustomCache, cache: cacheEnv.customCache }));
      expect(seen).toEqual({ custom: false, cache: before.customCache });
    } finally {
      Object.assign(cacheEnv, before);
    }
  });
});

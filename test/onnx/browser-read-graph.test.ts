/**
 * A page reads its model's graph as the file streams in (host-browser.ts `readGraph`, on
 * inline-data.ts' forwardReadAt): the same graph, byte for byte, as the Node host's positional
 * reads give, the large inline weights left as references into the file, and never the file
 * whole. Served over real HTTP on 127.0.0.1, in chunks of a few bytes to the network's sizes.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../lib/errors.js';
import { browserHost } from '../../lib/policy/onnx/host-browser.js';
import { readExternalPieces } from '../../lib/policy/onnx/external-data.js';
import { ForwardReader, forwardReadAt, inlineAsExternal } from '../../lib/policy/onnx/inline-data.js';
import { chunks, type HubEnv } from '../../lib/policy/onnx/location.js';
import { readStreamed } from '../../lib/policy/onnx/streamed-model.js';
import { TINY_DIR } from './fixtures.js';

const FILE = 'onnx/model.onnx';
const ENV: HubEnv = { remoteHost: 'http://127.0.0.1:9', remotePathTemplate: '{model}/resolve/{revision}/' };

let bytes: Uint8Array;
let server: Server;
let base: string;
beforeAll(async () => {
  bytes = new Uint8Array(await readFile(join(TINY_DIR, FILE)));
  // /sized/ states the body's length, as a static server or the hub does; /chunked/ does not.
  server = createServer((request, response) => {
    const sized = request.url?.startsWith('/sized/');
    response.writeHead(200, { 'Content-Type': 'application/octet-stream', ...(sized ? { 'Content-Length': String(bytes.length) } : {}) });
    // Many small writes: the reader meets chunk edges inside fields.
    for (let at = 0; at < bytes.length; at += 65_000) response.write(bytes.subarray(at, at + 65_000));
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function* chunked(data: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.slice(at, at + size);
}

/** Byte-for-byte equality (vitest's deep equality walks a megabyte element by element for seconds). */
function expectSameBytes(actual: Uint8Array | undefined, expected: Uint8Array): void {
  expect(actual?.length).toBe(expected.length);
  expect(Buffer.compare(actual!, expected)).toBe(0);
}

const positional = (offset: number, length: number) => Promise.resolve(bytes.slice(offset, Math.min(bytes.length, offset + length)));

describe('forwardReadAt', () => {
  it('reads what positional reads read, in order, across chunk edges', async () => {
    for (const size of [61, 4096, 1 << 20]) {
      const readAt = forwardReadAt(chunked(bytes, size));
      // Overlapping windows, skips past large spans, a read at the very end, one past it.
      const reads: Array<[number, number]> = [[0, 20], [5, 100], [50, 30_000], [200_000, 10], [200_005, 1 << 20], [bytes.length - 3, 20], [bytes.length + 5, 4]];
      for (const [offset, length] of reads) expectSameBytes(await readAt(offset, length), await positional(offset, length));
    }
  });

  it('keeps ranges as they pass, across chunk edges, those past the last read filled by rest()', async () => {
    for (const size of [61, 4096, 1 << 20]) {
      const reader = new ForwardReader(chunked(bytes, size));
      await reader.readAt(1000, 20);
      // Starting inside what was read, past it, and past every later read.
      const ranges: Array<[number, number]> = [[1005, 70_000], [90_000, 300], [bytes.length - 500_000, 400_000]];
      const kept = ranges.slice(0, 2).map(([offset, length]) => reader.keep(offset, length));
      await reader.readAt(200_000, 10);
      kept.push(reader.keep(...ranges[2]));
      await reader.rest();
      for (const [i, [offset, length]] of ranges.entries()) expectSameBytes(kept[i], await positional(offset, length));
    }
  });

  it('refuses a read before an earlier read started, with a ModelLoadError', async () => {
    const readAt = forwardReadAt(chunked(bytes, 4096));
    await readAt(10_000, 10);
    await expect(readAt(100, 10)).rejects.toThrow(ModelLoadError);
  });

  it('walks the graph file to the bytes positional reads give', async () => {
    expectSameBytes(await inlineAsExternal(forwardReadAt(chunked(bytes, 999)), 'model.onnx', bytes.length), await inlineAsExternal(positional, 'model.onnx', bytes.length));
  });
});

describe('a fetched body read chunk by chunk (chunks)', () => {
  it('is read into one buffer again and again, leaving no chunk behind, and gives every byte', async () => {
    const response = await fetch(`${base}/sized/${FILE}`);
    const seen: Uint8Array[] = [];
    const parts: Uint8Array[] = [];
    for await (const chunk of chunks(response.body!)) {
      // The chunk before this one was read into the buffer this one fills: its view is detached.
      if (seen.length > 0) expect(seen[seen.length - 1].buffer.byteLength).toBe(0);
      seen.push(chunk);
      parts.push(chunk.slice());
    }
    expect(seen.length).toBeGreaterThan(1);
    expectSameBytes(Buffer.concat(parts), bytes);
  });
});

describe("a page's graph read as it streams in (browserHost.readGraph)", () => {
  it('is the Node host’s graph, the large weights as references, not the file', async () => {
    const graph = await browserHost.readGraph!(ENV, { id: `${base}/sized`, local: true }, FILE);
    expectSameBytes(graph, await inlineAsExternal(positional, 'model.onnx', bytes.length));
    // The tiny model's weights are most of its file; the graph without them is a small part of it.
    expect(graph!.length).toBeLessThan(bytes.length / 4);
  });

  it('leaves a body of unstated length to be read whole (undefined)', async () => {
    expect(await browserHost.readGraph!(ENV, { id: `${base}/chunked`, local: true }, FILE)).toBeUndefined();
  });
});

describe('a model file streamed once for its graph and its weights (readStreamed)', () => {
  it('gives the graph and the pieces that positional reads give, each piece an array of its own', async () => {
    const structure = await inlineAsExternal(positional, 'model.onnx', bytes.length);
    const expected = await readExternalPieces(structure, async (_file, ranges) => Promise.all(ranges.map(({ offset, length }) => positional(offset, length))));
    const response = await fetch(`${base}/sized/${FILE}`);
    let loaded = 0;
    const streamed = await readStreamed(response.body!, 'model.onnx', bytes.length, (n) => (loaded = n));
    expectSameBytes(streamed.graph, expected.graph);
    expect(Object.keys(streamed.externalData)).toEqual(Object.keys(expected.externalData));
    for (const [name, piece] of Object.entries(streamed.externalData)) {
      expectSameBytes(piece, expected.externalData[name]);
      expect(piece.buffer.byteLength).toBe(piece.byteLength);
    }
    expect(loaded).toBeGreaterThan(bytes.length - (1 << 20));
  });

  it('refuses a graph whose data is in a file of its own, with a ModelLoadError', async () => {
    const structure = await inlineAsExternal(positional, 'model.onnx_data', bytes.length);
    const body = new Response(structure as Uint8Array<ArrayBuffer>).body!;
    await expect(readStreamed(body, 'model.onnx', structure.length)).rejects.toThrow(ModelLoadError);
  });
});

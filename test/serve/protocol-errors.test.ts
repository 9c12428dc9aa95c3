/**
 * What Node's HTTP layer refuses, and what fails below a handler, still answers with the
 * OpenAI-shaped JSON error (never an empty body or a 500): raw bytes over a socket on 127.0.0.1.
 */
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, startToyServer, type ToyServer } from './helpers.js';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any -- response bodies under test

/** Writes `bytes` on a fresh connection and reads until the server closes it. */
function exchange(port: number, bytes: string | Buffer): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d) => (text += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const split = text.indexOf('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, headers: text.slice(0, split), body: split < 0 ? '' : text.slice(split + 4) });
    });
    socket.end(bytes);
  });
}

function expectJsonError(response: { headers: string; body: string }, code?: string): void {
  expect(response.headers).toMatch(/content-type: application\/json/i);
  const json: Json = JSON.parse(response.body);
  expect(Object.keys(json)).toEqual(['error']);
  expect(Object.keys(json.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(json.error.message.length).toBeGreaterThan(10);
  if (code) expect(json.error.code).toBe(code);
}

let toy: ToyServer;
let port: number;
let host: string;
beforeAll(async () => {
  toy = await startToyServer();
  port = toy.server.port;
  host = `Host: 127.0.0.1:${port}\r\n`;
});
afterAll(() => toy.server.close());

describe('malformed request targets', () => {
  for (const target of ['http://[::1', 'http://', 'http://[', 'https://:99999/v1/models']) {
    it(`GET ${target} is a 400 invalid_url`, async () => {
      const response = await exchange(port, `GET ${target} HTTP/1.1\r\n${host}Connection: close\r\n\r\n`);
      expect(response.status).toBe(400);
      expectJsonError(response, 'invalid_url');
    });
  }

  it('an absolute-form target that parses is routed by its path', async () => {
    const response = await exchange(port, `GET http://127.0.0.1:${port}/v1/models HTTP/1.1\r\n${host}Connection: close\r\n\r\n`);
    expect(response.status).toBe(200);
  });
});

describe("requests Node's parser refuses", () => {
  const json = 'Content-Type: application/json\r\n';
  const cases: [string, string | Buffer, number][] = [
    ['Content-Length with Transfer-Encoding', `POST /v1/feedback HTTP/1.1\r\n${'HOST'}${json}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    ['a non-numeric Content-Length', `POST /v1/feedback HTTP/1.1\r\nHOST${json}Content-Length: abc\r\n\r\n{}`, 400],
    ['two different Content-Lengths', `POST /v1/feedback HTTP/1.1\r\nHOST${json}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400],
    ['an obs-folded header', `GET /v1/models HTTP/1.1\r\nHOSTX-Folded: a\r\n b\r\n\r\n`, 400],
    ['a NUL in a header value', `GET /v1/models HTTP/1.1\r\nHOSTX-Nul: a\u0000b\r\n\r\n`, 400],
    ['a space before the colon', `GET /v1/models HTTP/1.1\r\nHOSTX-Bad : a\r\n\r\n`, 400],
    ['a bad chunk size', `POST /v1/feedback HTTP/1.1\r\nHOST${json}Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400],
    ['a 20 KB header', `GET /v1/models HTTP/1.1\r\nHOSTX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
    ['the method FOO', `FOO /v1/models HTTP/1.1\r\nHOST\r\n`, 501],
    ['the HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 505],
    ['HTTP/3.0', `GET /v1/models HTTP/3.0\r\nHOST\r\n`, 505],
    ['garbage where the method goes', '\u0001\u0002\u0003 nonsense\r\n\r\n', 501],
  ];
  for (const [name, bytes, status] of cases) {
    it(`${name}: ${status} with a JSON body`, async () => {
      const response = await exchange(port, typeof bytes === 'string' ? bytes.replace('HOST', host) : bytes);
      expect(response.status).toBe(status);
      expectJsonError(response);
    });
  }

  it('keeps serving afterwards', async () => {
    expect((await fetch(`${toy.url}/models`)).status).toBe(200);
  });
});

describe('a body past the limit', () => {
  it("gets the 413 JSON on Node's own fetch, every time, for a 20 MB POST", async () => {
    const body = JSON.stringify({ model: 'toy', prompt: 'x'.repeat(20 << 20) });
    for (let i = 0; i < 3; i++) {
      const res = await post(`${toy.url}/completions`, body);
      expect(res.status).toBe(413);
      expect((await res.json()).error.code).toBe('request_too_large');
    }
  });

  it('gets the 413 when the body is chunked with no declared length', async () => {
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(1 << 20).fill(32));
        controller.close();
      },
    });
    const res = await fetch(`${toy.url}/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunks, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe('request_too_large');
  });
});

describe.runIf(existsSync('/dev/full'))('a feedback file on a full disk', () => {
  it('is a 507 insufficient_storage, and the group stays untold', async () => {
    // Every write to /dev/full fails with ENOSPC, as on a disk with no space left.
    const full = await startToyServer({ feedbackFile: '/dev/full' });
    try {
      const asked: Json = await (await post(`${full.url}/chat/completions`, { model: 'toy', messages: [{ role: 'user', content: 'hi' }], n: 2, max_tokens: 4 })).json();
      const told = await post(`${full.url}/feedback`, { group_id: asked.id, rewards: [1, 0] });
      expect(told.status).toBe(507);
      const error: Json = (await told.json()).error;
      expect(error).toMatchObject({ code: 'insufficient_storage', type: 'server_error' });
      expect(error.message).not.toContain('/dev/full');
      const group: Json = await (await fetch(`${full.url}/groups/${asked.id}`)).json();
      expect(group.feedback).toBeNull();
    } finally {
      await full.server.close();
    }
  });
});

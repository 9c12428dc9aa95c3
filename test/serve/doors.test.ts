/**
 * The smaller doors of issue 42, over real sockets on 127.0.0.1 against the toy server: a request
 * line ended by a bare LF is a 400 (not "HTTP version not supported"); a refused preflight carries
 * no CORS headers; invalid UTF-8 in a JSON body is a 400, not replaced and answered; `stop` and
 * name-like strings are capped; a body declared and never sent, and headers trickled, are a shaped
 * 408 within the server's timeouts; a client that never reads a large stream is cut off once the
 * events waiting for it pass the buffer cap, instead of growing the server's memory.
 */
import { createServer, request } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStream, MAX_BUFFERED_EVENTS } from '../../lib/serve/http.js';
import { post, startToyServer, type ToyServer } from './helpers.js';

let toy: ToyServer;
const log: string[] = [];
let port: number;
beforeAll(async () => {
  toy = await startToyServer({ corsOrigins: ['http://app.example'], headersTimeoutMs: 400, requestTimeoutMs: 800, log: (line) => log.push(line) });
  port = Number(new URL(toy.url).port);
});
afterAll(() => toy?.server.close());

const chat = { model: 'toy', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 };

/** Writes `chunks` to a raw connection (`pause` ms between them), returns all it reads until the server closes it. */
function rawExchange(chunks: Array<string | Buffer>, pause = 0): Promise<{ text: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let open = true;
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      open = false;
      resolve({ text, ms: performance.now() - started });
    });
    socket.setTimeout(10_000, () => {
      socket.destroy();
      reject(new Error(`no close in 10 s; read ${JSON.stringify(text.slice(0, 200))}`));
    });
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (!open) return;
        socket.write(chunk);
        if (pause) await new Promise((r) => setTimeout(r, pause));
      }
    });
  });
}

const statusOf = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const errorOf = (text: string) => (JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } }).error;

describe('smaller doors', () => {
  it('a request line ended by a bare LF is a 400 malformed_request, the connection closed', async () => {
    for (const raw of ['GET /health HTTP/1.1\nHost: 127.0.0.1\n\n', 'GET /health HTTP/1.1\rHost: 127.0.0.1\r\n\r\n']) {
      const { text } = await rawExchange([raw]);
      expect([JSON.stringify(raw), statusOf(text)]).toEqual([JSON.stringify(raw), 400]);
      expect(errorOf(text).code).toBe('malformed_request');
    }
  });

  it('a preflight refused for its forged Host carries no CORS headers; an allowed one does', async () => {
    const preflight = (host: string) =>
      new Promise<{ status: number; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/v1/chat/completions', method: 'OPTIONS', setHost: false, headers: { host, origin: 'http://app.example', 'access-control-request-method': 'POST' } },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const refused = await preflight('evil.example');
    expect(refused.status).toBe(403);
    expect(Object.keys(refused.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    const allowed = await preflight(`127.0.0.1:${port}`);
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('http://app.example');
  });

  it('invalid UTF-8 in a JSON body is a 400, not answered with U+FFFD in its place', async () => {
    const body = Buffer.concat([Buffer.from('{"model":"toy","messages":[{"role":"user","content":"a'), Buffer.from([0xff, 0xfe]), Buffer.from('"}],"max_tokens":2}')]);
    const res = await fetch(`${toy.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'invalid_json', message: expect.stringMatching(/UTF-8/) });
  });

  it('caps stop strings and name-like fields (a 500 KB stop was accepted)', async () => {
    for (const [body, param] of [
      [{ ...chat, stop: 'x'.repeat(500_000) }, 'stop'],
      [{ ...chat, stop: ['ok', 'y'.repeat(257)] }, 'stop'],
      [{ ...chat, model: 'm'.repeat(10_000) }, 'model'],
      [{ ...chat, response_format: { type: 'json_schema', json_schema: { name: 'n'.repeat(65), schema: { type: 'string' } } } }, 'response_format.json_schema.name'],
    ] as const) {
      const res = await post(`${toy.url}/chat/completions`, body);
      expect([param, res.status]).toEqual([param, 400]);
      expect(((await res.json()) as { error: { param: string; code: string } }).error).toMatchObject({ param, code: 'string_above_max_length' });
    }
    // At the cap it is served.
    expect((await post(`${toy.url}/chat/completions`, { ...chat, stop: 's'.repeat(256) })).status).toBe(200);
  });

  it('a body declared and never sent is a shaped 408 at the request timeout, not held open', async () => {
    const { text, ms } = await rawExchange([`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 2000000\r\n\r\n{"model":`]);
    expect(statusOf(text)).toBe(408);
    expect(errorOf(text).code).toBe('request_timeout');
    expect(ms).toBeLessThan(5_000);
  });

  it('headers trickled a byte at a time are a shaped 408 at the headers timeout', async () => {
    const head = `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: ${'a'.repeat(200)}`;
    const { text, ms } = await rawExchange(Array.from(head), 20);
    expect(statusOf(text)).toBe(408);
    expect(errorOf(text).code).toBe('request_timeout');
    expect(ms).toBeLessThan(5_000);
  });

  it('the access log writes no query string (a key sent as ?api_key= stays out of it)', async () => {
    await fetch(`${toy.url}/models?api_key=sk-live-logged-0123456789`);
    await fetch(`${toy.url.replace(/\/v1$/, '')}/health?token=sk-live-logged-0123456789`);
    const lines = log.filter((line) => line.includes('/v1/models') || line.includes('/health'));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of lines) expect(line).not.toContain('sk-live-logged');
    expect(lines.some((line) => line.startsWith('GET /v1/models?[query not logged]'))).toBe(true);
  });

  it('a client that never reads a large stream is cut off once its events pass the buffer cap', async () => {
    // The server's event stream over a real connection whose client never reads: 64 MiB of events
    // offered, at most the cap (plus one event) ever waiting in the server's memory.
    let most = 0;
    let sent = 0;
    let cutOff: () => void;
    const closed = new Promise<void>((resolve) => (cutOff = resolve));
    const server = createServer((_req, res) => {
      res.on('close', () => cutOff());
      const stream = new EventStream(res);
      const event = { text: 'x'.repeat(4000) };
      const push = () => {
        for (let i = 0; i < 64 && !res.destroyed; i++) {
          stream.send(event);
          sent++;
          most = Math.max(most, res.writableLength);
        }
        if (!res.destroyed && sent < 16_384) setImmediate(push);
      };
      push();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed;
    socket.destroy();
    server.close();
    expect(sent).toBeLessThan(16_384);
    expect(most).toBeLessThanOrEqual(MAX_BUFFERED_EVENTS + 5_000);
  }, 40_000);
});

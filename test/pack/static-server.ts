/**
 * A plain static file server on 127.0.0.1 for the consumer builds: URL prefixes mapped to folders,
 * as a site deploying a bundle would serve it. `isolated` sends COOP/COEP (the page may run
 * WebAssembly threads); `cors` answers any origin, as huggingface.co does for model files.
 */
import { createReadStream, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize } from 'node:path';

const TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.onnx': 'application/octet-stream',
  '.css': 'text/css',
};

export interface StaticServer {
  url: string;
  /** Paths asked for that were not there. */
  missing: string[];
  close(): Promise<void>;
}

export async function serveStatic(routes: Record<string, string>, { isolated = false, cors = false } = {}): Promise<StaticServer> {
  const missing: string[] = [];
  const prefixes = Object.keys(routes).sort((a, b) => b.length - a.length);
  const server: Server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
    const prefix = prefixes.find((p) => path.startsWith(p));
    const relative = prefix === undefined ? '' : normalize(path.slice(prefix.length)).replace(/^(\.\.[/\\])+/, '');
    let file = prefix === undefined ? '' : join(routes[prefix], relative);
    try {
      if (file && statSync(file).isDirectory()) file = join(file, 'index.html');
      if (!file || !statSync(file).isFile()) throw new Error('not a file');
    } catch {
      missing.push(path);
      response.writeHead(404, { 'Content-Type': 'text/html' }).end('<!doctype html><title>404</title>Not found');
      return;
    }
    const headers: Record<string, string> = { 'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream' };
    if (isolated) Object.assign(headers, { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' });
    if (cors) headers['Access-Control-Allow-Origin'] = '*';
    response.writeHead(200, headers);
    createReadStream(file).pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    missing,
    // The browser may still hold a connection (keep-alive, or a worker's request in flight) when a
    // test ends; closing only idle ones would wait on it until the browser is closed after the test.
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

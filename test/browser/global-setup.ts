import { createServer, type ViteDevServer } from 'vite';
import type { TestProject } from 'vitest/node';
import { browserServerConfig } from './server-config.js';

declare module 'vitest' {
  export interface ProvidedContext {
    browserBaseURL: string;
  }
}

/** One Vite server for every browser suite of the run; each suite launches its own Chromium. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server: ViteDevServer = await createServer(browserServerConfig);
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('test server did not bind a port');
  project.provide('browserBaseURL', `http://127.0.0.1:${address.port}`);
  return () => server.close();
}

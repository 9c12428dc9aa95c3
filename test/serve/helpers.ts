/** Shared helpers for the server tests: real HTTP on 127.0.0.1 with an ephemeral port. */
import { serve, type ServeOptions, type WebgrpoServer } from '../../lib/server.js';
import { createToyPolicy, type ToyPolicy, type ToyPolicyOptions } from '../fixtures/toy-policy.js';

export interface ToyServer {
  server: WebgrpoServer;
  policy: ToyPolicy;
  url: string;
}

export async function startToyServer(options: Partial<ServeOptions> & { toy?: ToyPolicyOptions } = {}): Promise<ToyServer> {
  const { toy, ...rest } = options;
  const policy = createToyPolicy(toy);
  const server = await serve({ ...rest, policy, port: 0, host: '127.0.0.1' } as ServeOptions);
  return { server, policy, url: server.url };
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The `data:` payloads of a server-sent event stream, `[DONE]` included as the string. */
export function parseSse(text: string): unknown[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      if (!block.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(block)}`);
      const data = block.slice(6);
      return data === '[DONE]' ? data : JSON.parse(data);
    });
}

/**
 * Requests from other sites: a web page can make the browser of whoever runs the server send
 * requests to it. Three checks close that door.
 * - `Host` must name this server (DNS rebinding makes an attacker's name resolve to 127.0.0.1, and
 *   the browser then sends that name): an IP literal the server listens on, `localhost` when it
 *   listens on loopback or every interface, or a name the operator allowed.
 * - A browser's `Origin` is accepted only when listed (CORS origins); requests without one
 *   (curl, SDKs, servers) are not browsers' and pass.
 * - POST bodies must be declared `application/json`: a `text/plain` or form post needs no CORS
 *   preflight, so without this any page could post blind.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { ApiError } from './api-error.js';

export interface GuardOptions {
  /** The address the server is bound to (`127.0.0.1`, `::`, `0.0.0.0`, ...). */
  listenHost: string;
  /** Extra names the `Host` header may carry (a reverse proxy's, a LAN name); '*' allows any. */
  allowedHosts: readonly string[];
  /** Browser origins allowed to call ('*' for any). */
  corsOrigins: readonly string[];
}

export function requestGuard(options: GuardOptions): (req: IncomingMessage) => void {
  const listen = unbracket(options.listenHost.toLowerCase());
  const wildcard = listen === '0.0.0.0' || listen === '::';
  const loopback = wildcard || isLoopback(listen);
  const names = new Set(options.allowedHosts.map((h) => h.toLowerCase()));
  const anyHost = names.has('*');
  const anyOrigin = options.corsOrigins.includes('*');

  function hostAllowed(header: string | undefined): boolean {
    if (anyHost) return true;
    const name = header === undefined ? undefined : hostName(header.toLowerCase());
    if (name === undefined) return false;
    if (names.has(name) || name === listen) return true;
    if (name === 'localhost') return loopback;
    // An IP literal cannot be rebound; it still has to be one this server answers on.
    if (isIP(name)) return wildcard || name === listen || (isLoopback(listen) && isLoopback(name));
    return false;
  }

  return (req) => {
    if (!hostAllowed(req.headers.host)) {
      throw new ApiError(
        403,
        `The Host header ${JSON.stringify(req.headers.host ?? '')} does not name this server; call it by the address it listens on, or start it with --allowed-host <name> (allowedHosts) for this name.`,
        { code: 'invalid_host' },
      );
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !anyOrigin && !options.corsOrigins.includes(origin)) {
      throw new ApiError(
        403,
        `Browser calls from the origin ${JSON.stringify(origin)} are not allowed; start the server with --cors-origin ${origin} (corsOrigins) to allow them.`,
        { code: 'origin_not_allowed' },
      );
    }
    if (req.method === 'POST' && !isJson(req.headers['content-type'])) {
      throw new ApiError(415, 'Send the request body as JSON with the header "Content-Type: application/json".', {
        code: 'unsupported_media_type',
      });
    }
  };
}

/** The name part of a Host header: `example.com:8000` -> `example.com`, `[::1]:8000` -> `::1`. */
function hostName(header: string): string | undefined {
  const value = header.trim();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end < 0) return undefined;
    const rest = value.slice(end + 1);
    if (rest !== '' && !/^:\d{1,5}$/.test(rest)) return undefined;
    return value.slice(1, end);
  }
  const match = /^([^:]+)(?::\d{1,5})?$/.exec(value);
  return match ? match[1] : undefined;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function isLoopback(address: string): boolean {
  return address === 'localhost' || address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address);
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);
}

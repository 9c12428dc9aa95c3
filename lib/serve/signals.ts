/**
 * SIGINT/SIGTERM: a first signal closes the server gracefully (requests finish, feedback is
 * flushed) and exits; a second one exits at once.
 */
import type { WebgrpoServer } from './server.js';

/** Closes `server` gracefully on the first SIGINT or SIGTERM and exits at once on a second; returns a function that removes the handlers. */
export function closeOnSignals(
  server: WebgrpoServer,
  options: { log?: (line: string) => void; onClosed?: () => void } = {},
): () => void {
  const log = options.log ?? (() => undefined);
  let signalled = false;
  const handler = (signal: NodeJS.Signals) => {
    if (signalled) {
      log(`${signal} again: exiting without waiting.`);
      process.exit(130);
    }
    signalled = true;
    log(`${signal}: finishing in-flight requests, then exiting (send it again to exit now).`);
    server.close().then(
      () => {
        log('server closed.');
        options.onClosed?.();
      },
      (error: unknown) => {
        log(`shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
        process.exitCode = 1;
        options.onClosed?.();
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

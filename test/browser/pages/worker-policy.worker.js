// Worker side of test/worker/worker.test.ts (plain JS, served as is; the sources it imports are
// TypeScript): the toy policy behind exposePolicy, from a factory that reports progress and can
// be told to fail.
import { ModelLoadError } from '/lib/errors.ts';
import { exposePolicy } from '/lib/worker/expose.ts';
import { createToyPolicy } from '/test/fixtures/toy-policy.ts';

exposePolicy(async (init, { onProgress }) => {
  const options = init ?? {};
  onProgress({ status: 'loading', loaded: 1, total: 2 });
  if (options.fail) throw new ModelLoadError('No model at /models/missing: check the path.');
  onProgress({ status: 'ready', loaded: 2, total: 2 });
  return createToyPolicy(options);
});

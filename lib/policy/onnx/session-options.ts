/**
 * The onnxruntime session options of the sampler's session: the user's (`OnnxPolicyOptions.sessionOptions`)
 * over webgrpo's defaults. In Node the default has onnxruntime's intra-op pool threads block
 * between ops instead of spinning: a decode step is a few hundred small ops, and threads that spin
 * after each one to catch the next sooner burned 35-40% of a step's CPU time at SmolLM2-135M's
 * shape, time taken from everything else on the machine, for no faster step on a loaded machine
 * (BENCHMARKS, scale-sample). The LoRA engine's sessions block the same way (lora-graph-engine.ts).
 * Pages are left to onnxruntime-web's own defaults (its threads are WebAssembly workers, not
 * measured here).
 *
 * Sessions made later from the sampler's (the hidden-state rebuild, an adapter's graph) are made
 * with the same options: `optionsOf` finds them.
 */
const SPINNING = 'session.intra_op.allow_spinning';

const remembered = new WeakMap<object, Record<string, unknown>>();

/** The options to make the sampler's session with: `user`'s entries win, in either form of `extra` (flat keys or nested objects). */
export function samplerSessionOptions(isNode: boolean, user: Record<string, unknown> = {}): Record<string, unknown> {
  if (!isNode) return { ...user };
  return { ...user, extra: blockingThreads(user.extra) };
}

/**
 * onnxruntime's `extra` session config entries with the intra-op threads blocking, unless `extra`
 * already chooses, flat (`'session.intra_op.allow_spinning'`) or nested (`session.intra_op.allow_spinning`).
 * The sampler's sessions in Node and the LoRA engine's everywhere (lora-graph-engine.ts) block this way.
 */
export function blockingThreads(extra: unknown): Record<string, unknown> {
  const entries = isRecord(extra) ? extra : {};
  const nested = isRecord(entries.session) && isRecord(entries.session.intra_op) ? entries.session.intra_op.allow_spinning : undefined;
  const chosen = SPINNING in entries || nested !== undefined;
  return { ...(chosen ? {} : { [SPINNING]: '0' }), ...entries };
}

/** Records the options `session` was made with. */
export function remember<T extends object>(session: T, options: Record<string, unknown>): T {
  remembered.set(session, options);
  return session;
}

/** The options `session` was made with (`remember`), or none. */
export function optionsOf(session: object): Record<string, unknown> {
  return remembered.get(session) ?? {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object';
}

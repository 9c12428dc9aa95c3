/**
 * The stores' record checksums (lib/store/checksum.ts): a record read back as written, reformatted
 * or with its keys reordered agrees with its checksums; any edit is found and named by its field,
 * to three names deep; checksums of another shape are an edit of `integrity` itself.
 */
import { describe, expect, it } from 'vitest';
import { changedField, sealed, unsealed } from '../../lib/store/checksum.js';

const record = {
  id: 'r',
  config: { epochs: 6, batchSize: 2, loss: { beta: 0.04, clip: { low: 0.2, high: 0.28 } }, rewards: [{ name: 'exact', weight: 1 }] },
  items: [{ index: 0, rollouts: [{ text: 'a', logprobs: [-0.5, -1] }] }],
  empty: [],
  nothing: {},
  skipped: undefined,
};

/** `value` as the store reads it back: through JSON text, its keys in reverse order. */
function readBack(value: unknown): unknown {
  const reorder = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(reorder) : typeof v === 'object' && v !== null ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reorder(x)])) : v;
  return reorder(JSON.parse(JSON.stringify(value, null, 2)));
}

const DROP = Symbol('drop');

/** What the checksums find after the stored record's field at `path` is set to `value` (or dropped); an empty path edits nothing. */
function changeOf(path: Array<string | number>, value?: unknown) {
  const stored = readBack(sealed(record)) as Record<string, unknown>;
  if (path.length > 0) {
    let node = stored as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
    const last = path[path.length - 1];
    if (value !== DROP) node[last] = value;
    else if (Array.isArray(node)) node.splice(last as number, 1);
    else delete node[last];
  }
  const { record: back, integrity } = unsealed(stored);
  return changedField(back, integrity);
}

describe('record checksums', () => {
  it('agree with the record read back, reformatted and reordered', () => {
    expect(changeOf([])).toBeUndefined();
    expect(Object.keys(sealed(record).integrity.fields)).toContain('config.loss.beta');
  });

  it.each<[string, Array<string | number>, unknown, { field: string; change: string }]>([
    ['a number', ['config', 'epochs'], 1, { field: 'config.epochs', change: 'changed' }],
    ['a number three names deep', ['config', 'loss', 'beta'], 0.05, { field: 'config.loss.beta', change: 'changed' }],
    ['a number deeper', ['config', 'loss', 'clip', 'high'], 0.3, { field: 'config.loss.clip', change: 'changed' }],
    ['a value in a list', ['items', 0, 'rollouts', 0, 'logprobs', 1], -2, { field: 'items[0].rollouts', change: 'changed' }],
    ['a field removed', ['config', 'batchSize'], DROP, { field: 'config.batchSize', change: 'removed' }],
    ['a field added', ['config', 'seed'], 1, { field: 'config.seed', change: 'added' }],
    ['an empty list made an object', ['empty'], {}, { field: 'empty', change: 'changed' }],
    ['an empty object filled', ['nothing', 'x'], 1, { field: 'nothing.x', change: 'added' }],
    ['a list item dropped', ['config', 'rewards', 0], DROP, { field: 'config.rewards[0]', change: 'removed' }],
    ['the checksums replaced', ['integrity'], 1.5, { field: 'integrity', change: 'changed' }],
    ['the checksums of another version', ['integrity', 'version'], 2, { field: 'integrity', change: 'changed' }],
  ])('find %s, named by its field', (_name, path, value, expected) => {
    expect(changeOf(path, value)).toEqual(expected);
  });

  it('leave a record written without them alone', () => {
    expect(unsealed(record)).toEqual({ record, integrity: undefined });
    expect(unsealed([1, 2])).toEqual({ record: [1, 2], integrity: undefined });
  });
});

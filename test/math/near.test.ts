/** The cross-engine comparison itself (test/fixtures/near.ts): it passes last-bit gaps and nothing more. */
import { describe, expect, it } from 'vitest';
import { differences } from '../fixtures/near.js';

describe('differences (cross-engine tolerance)', () => {
  it('passes the last-place gaps seen between Node and Chromium', () => {
    expect(differences(2.5367905382004308, 2.536790538200431)).toEqual([]);
    expect(differences({ loss: [-0.008920750187007713] }, { loss: [-0.008920750187007711] })).toEqual([]);
    expect(differences(new Float64Array([0, 1e-17]), [1e-17, 0])).toEqual([]);
  });

  it('reports real gaps, shapes, types and anything that is not a number', () => {
    expect(differences(1, 1 + 1e-10)).toHaveLength(1);
    expect(differences({ a: [1, 2] }, { a: [1, 2, 3] })[0]).toMatch(/\$\.a: length 2 vs 3/);
    expect(differences({ a: 1 }, { b: 1 })).toHaveLength(2);
    expect(differences('x', 'y')).toHaveLength(1);
    expect(differences(Number.NaN, Number.NaN)).toEqual([]);
    expect(differences(1, '1')).toHaveLength(1);
    expect(differences({ a: undefined }, {})).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { AbortError, BusyError, HttpError, InvalidInputError, ModelLoadError, NotFoundError, UnsupportedError, WebgrpoError } from '../../lib/errors.js';
import { packGroup, packScore, reviveError, serializeError, unpackGroup, unpackScore } from '../../lib/worker/protocol.js';
import { createToyPolicy } from '../fixtures/toy-policy.js';

describe('worker protocol', () => {
  it('moves groups and scores in transferred buffers and restores them exactly', async () => {
    const policy = createToyPolicy();
    const group = await policy.generateGroup({ prompt: 'transfer me', groupSize: 4, seed: 1, maxNewTokens: 30, topLogprobs: 3 });
    const { value, transfer } = packGroup(group);
    const received = structuredClone(value, { transfer });
    // Transferred, not copied: the sender's buffers are detached.
    expect(transfer.length).toBeGreaterThanOrEqual(5);
    expect(transfer.every((b) => b.byteLength === 0)).toBe(true);
    expect(unpackGroup(received)).toEqual(group);

    const score = await policy.scoreCompletions!({ prompt: 'transfer me', completions: group.completions.map((c) => c.tokenIds) });
    const packed = packScore(score);
    expect(unpackScore(structuredClone(packed.value, { transfer: packed.transfer }))).toEqual(score);
  });

  it('re-creates every typed error with its class, code and fields', () => {
    const errors = [
      new InvalidInputError('groupSize', 'must be >= 1'),
      new HttpError(429, 'rate limited'),
      new AbortError(),
      new ModelLoadError('missing'),
      new NotFoundError('no group'),
      new UnsupportedError('no scoring'),
      new BusyError('full'),
      new WebgrpoError('StoreQuota', 'quota exceeded'),
    ];
    for (const error of errors) {
      const revived = reviveError(structuredClone(serializeError(error)));
      expect(revived).toBeInstanceOf(error.constructor);
      expect(revived).toMatchObject({ name: error.name, message: error.message, code: error.code });
    }
    expect((reviveError(serializeError(errors[0])) as InvalidInputError).argument).toBe('groupSize');
    expect((reviveError(serializeError(errors[1])) as HttpError).status).toBe(429);
    const plain = reviveError(serializeError(new TypeError('boom')));
    expect(plain).toMatchObject({ name: 'TypeError', message: 'boom' });
  });
});

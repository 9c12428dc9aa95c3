import { describe, expect, it } from 'vitest';
import * as errors from '../../lib/errors.js';
import { AbortError, AlreadyRunningError, BusyError, HttpError, InvalidInputError, ModelLoadError, NotFoundError, ParseError, ResponseTooLargeError, StoreCorruptError, StoreError, StoreQuotaError, UnsupportedError, WebgrpoError } from '../../lib/errors.js';
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
      new StoreQuotaError('quota exceeded'),
      new StoreError('closed'),
      new StoreCorruptError('runs/r/run.json', 'unreadable'),
      new AlreadyRunningError('run-1', 'busy'),
      new ParseError('not JSON'),
      new ResponseTooLargeError(200, 1024, 'too big'),
      new WebgrpoError('Generation', 'no class of its own'),
    ];
    for (const error of errors) {
      const revived = reviveError(structuredClone(serializeError(error)));
      expect(revived).toBeInstanceOf(error.constructor);
      expect(revived).toMatchObject({ name: error.name, message: error.message, code: error.code });
    }
    expect((reviveError(serializeError(errors[0])) as InvalidInputError).argument).toBe('groupSize');
    expect((reviveError(serializeError(errors[1])) as HttpError).status).toBe(429);
    expect(reviveError(serializeError(errors[9]))).toMatchObject({ what: 'runs/r/run.json' });
    expect(reviveError(serializeError(errors[10]))).toMatchObject({ runId: 'run-1' });
    expect(reviveError(serializeError(errors[12]))).toMatchObject({ status: 200, limit: 1024 });
    const plain = reviveError(serializeError(new TypeError('boom')));
    expect(plain).toMatchObject({ name: 'TypeError', message: 'boom' });
  });

  it('revives by code, not by name: a minified build that renamed the classes still gets them back', () => {
    // What a minified worker sends: the class renamed to `t`, the code and fields intact.
    const sent = { ...serializeError(new InvalidInputError('groupSize', 'must be >= 1')), name: 't' };
    const revived = reviveError(structuredClone(sent));
    expect(revived).toBeInstanceOf(InvalidInputError);
    expect(revived).toMatchObject({ name: 'InvalidInputError', argument: 'groupSize', code: 'InvalidInput' });
  });

  it('names every error class by a literal that matches the class', () => {
    const classes = Object.entries(errors).filter(([, value]) => typeof value === 'function' && value.prototype instanceof Error);
    expect(classes.length).toBeGreaterThanOrEqual(14);
    for (const [exported, Class] of classes) {
      const Named = Class as unknown as new (...args: unknown[]) => Error;
      const instance = exported === 'WebgrpoError' ? new Named('Generation', 'x') : new Named('a', 'b', 'c', 'd');
      expect(instance.name).toBe(exported);
      // Own property, so it survives a minifier renaming the class.
      expect(Object.prototype.hasOwnProperty.call(instance, 'name')).toBe(true);
    }
  });
});

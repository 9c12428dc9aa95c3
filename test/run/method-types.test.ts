/**
 * `Method` takes its types as one object of named fields (`MethodTypes`), each left out at its
 * default, and checks a method's hooks and its callers by them (`npx tsc` checks these:
 * expectTypeOf and @ts-expect-error fail the typecheck, not the run).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { LoopHandles, PayloadOf, Run, StepPayloadBase } from '../../lib/index.js';
import { methodOf, startRun, type Method, type ResolvedMethodTypes, type StartOptions } from '../../lib/method.js';
import { bestOfG, countingPolicy, lengthReward, type BestOfGOptions, type BestOfGResult } from './best-of-g.js';

describe("a method's types", () => {
  it('take their defaults where a method leaves them out', () => {
    type Plain = ResolvedMethodTypes<{ kind: 'plain' }>;
    expectTypeOf<Plain['handles']>().toEqualTypeOf<LoopHandles>();
    expectTypeOf<Plain['result']>().toEqualTypeOf<unknown>();
    expectTypeOf<Plain['payload']>().toEqualTypeOf<StepPayloadBase & { kind: 'plain' }>();
    expectTypeOf<Plain['options']>().toEqualTypeOf<StartOptions<LoopHandles>>();
    // A built-in kind's payload is its own.
    expectTypeOf<ResolvedMethodTypes<{ kind: 'router' }>['payload']>().toEqualTypeOf<PayloadOf<'router'>>();
  });

  it('are never where they disagree: a payload of another kind, options without the handles', () => {
    expectTypeOf<ResolvedMethodTypes<{ kind: 'a'; payload: { kind: 'b' } }>['payload']>().toBeNever();
    type Handles = LoopHandles & { critic: string };
    expectTypeOf<ResolvedMethodTypes<{ kind: 'a'; handles: Handles; options: StartOptions<LoopHandles> }>['options']>().toBeNever();
    expectTypeOf<ResolvedMethodTypes<{ kind: 'a'; handles: Handles; options: StartOptions<Handles> }>['options']>().toEqualTypeOf<StartOptions<Handles>>();
  });

  it("check a method's hooks and its start's options and result", () => {
    expectTypeOf(bestOfG.create).parameter(0).toEqualTypeOf<BestOfGOptions>();
    expectTypeOf(() => startRun(bestOfG, { policy: countingPolicy(), rewards: [lengthReward], dataset: [] })).returns.toEqualTypeOf<Run<unknown, BestOfGResult>>();
    // @ts-expect-error a start without the dataset its options ask for
    void (() => startRun(bestOfG, { policy: countingPolicy(), rewards: [lengthReward] }));
    const wrong: Method<{ kind: 'wrong'; payload: { kind: 'other' } }> = {
      kind: 'wrong',
      record: { kind: 'wrong', config() {} },
      create: () => ({ config: bestOfG.create({ policy: countingPolicy(), rewards: [lengthReward], dataset: [] }).config }),
      validateHandles() {},
      // @ts-expect-error its payload is of another kind than the method
      open: async () => ({ finishStep: async () => ({ payload: { kind: 'other' } }), result: async () => undefined }),
    };
    void wrong;
  });

  it("let a method of no particular kind (the registry's) start with whatever options it takes", () => {
    const method = methodOf('best-of-g')!;
    expectTypeOf(() => startRun(method, { policy: countingPolicy(), rewards: [lengthReward], dataset: [], groupSize: 2 })).returns.toEqualTypeOf<Run<unknown, unknown>>();
  });
});

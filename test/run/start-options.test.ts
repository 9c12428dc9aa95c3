/**
 * Every start function refuses a missing options object with a typed error naming `options`,
 * before it reads any option: the built-in methods' starts run their own `create` first (so their
 * options are followed into their code), `startRun` checks before calling a method's. (`loraGrpo`
 * spreads its options into `gradientGrpo`'s, so a missing object reads as one without a policy.)
 */
import { describe, expect, it } from 'vitest';
import { routerGrpo, trainingFreeGrpo } from '../../lib/index.js';
import { gradientGrpo } from '../../lib/grad.js';
import { startRun } from '../../lib/method.js';
import { bestOfG } from './best-of-g.js';

const starts: Record<string, (options: never) => unknown> = {
  trainingFreeGrpo,
  gradientGrpo,
  routerGrpo,
  'startRun(bestOfG)': (options) => startRun(bestOfG, options),
};

describe('a start without an options object', () => {
  it.each(Object.keys(starts))('%s throws InvalidInput on `options`', (name) => {
    for (const options of [undefined, null, 42, 'policy']) {
      expect(() => starts[name](options as never)).toThrow(expect.objectContaining({ code: 'InvalidInput', argument: 'options' }));
    }
  });
});

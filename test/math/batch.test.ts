import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../lib/index.js';
import { computeAdvantages, GeneratedBatch, GeneratedSequenceBatch, GroupRolloutBatch, GrpoConfig, grpoLoss, rolloutLossBatch, SequenceRolloutBatch } from '../../lib/math.js';

function expectInvalid(fn: () => unknown, argument: string) {
  expect(fn).toThrow(InvalidInputError);
  try {
    fn();
  } catch (error) {
    expect((error as InvalidInputError).argument).toBe(argument);
  }
}

const outputs = [
  [5, 6, 7],
  [5, 8, 0],
  [9, 9, 9],
  [1, 2, 0],
];
const responseMask = [
  [1, 1, 1],
  [1, 1, 0],
  [1, 1, 1],
  [1, 1, 0],
];
const oldLogProbs = outputs.map((row) => row.map((_, j) => -0.5 - 0.1 * j));

function grouped(groupSize = 2) {
  const generation = new GeneratedBatch({ outputs, rewards: [1, 0, 0.5, 0.5] });
  const sequenceBatch = new GeneratedSequenceBatch({ generation, responseMask });
  const rollout = new SequenceRolloutBatch({ sequenceBatch, oldLogProbs });
  return new GroupRolloutBatch({ rollout, groupSize });
}

describe('batch contract', () => {
  it('wraps layer by layer and exposes the shared views', () => {
    const batch = grouped();
    expect(batch.batchSize).toBe(4);
    expect(batch.numGroups).toBe(2);
    expect(batch.rollout.sequences).toBe(outputs);
    expect(batch.rollout.responseMask).toBe(responseMask);
    expect(batch.rollout.sequenceRewards).toEqual([1, 0, 0.5, 0.5]);
    const allOnes = new GeneratedSequenceBatch({ generation: new GeneratedBatch({ outputs }) });
    expect(allOnes.responseMask).toEqual(outputs.map((row) => row.map(() => 1)));
  });

  it('validates shapes and that the group size divides the batch', () => {
    expectInvalid(() => new GeneratedBatch({ outputs: [] }), 'outputs');
    expectInvalid(() => new GeneratedBatch({ outputs: [[1, 2], [3]] }), 'outputs');
    expectInvalid(() => new GeneratedBatch({ outputs: [[1, -2]] }), 'outputs');
    expectInvalid(() => new GeneratedBatch({ outputs, rewards: [1, 2] }), 'rewards');
    const generation = new GeneratedBatch({ outputs, rewards: [1, 0, 1, 0] });
    expectInvalid(() => new GeneratedSequenceBatch({ generation, responseMask: [[1, 1, 1]] }), 'responseMask');
    expectInvalid(() => new GeneratedSequenceBatch({ generation, responseMask: outputs.map(() => [1, 2, 1]) }), 'responseMask');
    const sequenceBatch = new GeneratedSequenceBatch({ generation, responseMask });
    expectInvalid(() => new SequenceRolloutBatch({ sequenceBatch, oldLogProbs: oldLogProbs.map((r) => r.slice(1)) }), 'oldLogProbs');
    expectInvalid(() => new SequenceRolloutBatch({ sequenceBatch, oldLogProbs: oldLogProbs.map(() => [0, NaN, 0]) }), 'oldLogProbs');
    const rollout = new SequenceRolloutBatch({ sequenceBatch, oldLogProbs });
    expectInvalid(() => new GroupRolloutBatch({ rollout, groupSize: 3 }), 'groupSize');
    expectInvalid(() => new GroupRolloutBatch({ rollout, groupSize: 1 }), 'groupSize');
    const unrewarded = new SequenceRolloutBatch({
      sequenceBatch: new GeneratedSequenceBatch({ generation: new GeneratedBatch({ outputs }) }),
      oldLogProbs,
    });
    expectInvalid(() => new GroupRolloutBatch({ rollout: unrewarded, groupSize: 2 }), 'rewards');
  });

  it("GrpoConfig has the seed's defaults and maps onto grpoLoss", () => {
    const config = new GrpoConfig();
    expect([config.numGenerations, config.clipParam, config.beta, config.entropyCoeff]).toEqual([4, 0.2, 0.01, 0.01]);
    expect(config.toLossConfig()).toEqual({
      lossType: 'dapo',
      epsilon: 0.2,
      beta: 0.01,
      entropyCoef: 0.01,
      importanceSamplingLevel: 'token',
    });
    expect(new GrpoConfig({ lossType: 'dr_grpo', maxCompletionLength: 64, delta: 2 }).toLossConfig()).toMatchObject({
      lossType: 'dr_grpo',
      maxCompletionLength: 64,
      delta: 2,
    });
    expectInvalid(() => new GrpoConfig({ lossType: 'dr_grpo' }), 'maxCompletionLength');
    // TRL's newer options pass through under their own names, validated like grpoLoss's.
    const vespo = new GrpoConfig({ lossType: 'vespo', vespoKPos: 1.5, importanceSampling: { mode: 'token_mask' }, topEntropyQuantile: 0.2, biasCorrectedKl: true });
    expect(vespo.toLossConfig()).toMatchObject({ lossType: 'vespo', vespoKPos: 1.5, importanceSampling: { mode: 'token_mask' }, topEntropyQuantile: 0.2, biasCorrectedKl: true });
    expect(new GrpoConfig().toLossConfig()).not.toHaveProperty('topEntropyQuantile');
    expectInvalid(() => new GrpoConfig({ lossType: 'luspo' }), 'importanceSamplingLevel');
    expectInvalid(() => new GrpoConfig({ lossType: 'vespo', importanceSampling: { mode: 'sequence_mask' } }), 'importanceSampling.mode');
    expectInvalid(() => new GrpoConfig({ clipParam: -1 }), 'clipParam');
    expectInvalid(() => new GrpoConfig({ numGenerations: 1 }), 'numGenerations');
  });

  it('rolloutLossBatch feeds grpoLoss the same numbers as wiring it by hand', () => {
    const batch = grouped();
    const logps = oldLogProbs.map((row) => row.map((x, j) => x + 0.05 * (j - 1)));
    const refLogps = oldLogProbs.map((row) => row.map((x) => x - 0.2));
    const entropies = oldLogProbs.map((row) => row.map(() => 1.5));
    const config = new GrpoConfig({ numGenerations: 2 }).toLossConfig();
    const { batch: lossBatch, advantages } = rolloutLossBatch(batch, { logps, refLogps, entropies });
    const manual = computeAdvantages([1, 0, 0.5, 0.5], { groupSize: 2 });
    expect(advantages).toEqual(manual);
    expect(grpoLoss(lossBatch, config)).toEqual(
      grpoLoss({ logps, oldLogps: oldLogProbs, refLogps, entropies, advantages: manual.advantages, mask: responseMask }, config),
    );
  });
});

/**
 * The playground's per-kind lookups: a step's payload as the panels read it (step-payload.ts) and
 * what a run's kind shows (kind-view.ts), for each built-in kind and for a kind it does not know.
 */
import { describe, expect, it } from 'vitest';
import type { RunRecord, StepRecord } from '../../lib/index.js';
import { kindView, trainsAdapter } from '../../site/lib/kind-view.js';
import { stageAfter } from '../../site/lib/live-stage.js';
import type { PlaygroundEvent } from '../../site/lib/methods.js';
import { stepView } from '../../site/lib/step-payload.js';
import { sampleRun, sampleStep } from '../tfgrpo/helpers/records.js';

const lessons = sampleRun('tf');
const base = sampleRun('x');
// Only the config fields the views read; the rest is the training-free sample's.
const gradient = { ...base, kind: 'gradient', config: { ...base.config, optimizer: { lr: 0.02 }, adapter: { rank: 4 }, numIterations: 3, loss: { lossType: 'dapo' } } } as unknown as RunRecord;
const lora = { ...base, kind: 'lora', config: { ...base.config, optimizer: { lr: 0.005 }, lora: { r: 2, alpha: 4, targetModules: ['q_proj'] }, numIterations: 1, loss: { lossType: 'grpo' } } } as unknown as RunRecord;
const router = { ...base, kind: 'router', config: { ...base.config, router: { learningRate: 0.5 } } } as unknown as RunRecord;

const metrics = { step: 1, loss: 0.25, gradNorm: 1, entropy: 2 };
const withPayload = (payload: Record<string, unknown>) => ({ ...sampleStep(1), payload }) as unknown as StepRecord;

describe('stepView', () => {
  it('reads each kind’s payload and leaves the rest empty', () => {
    const tf = sampleStep(2);
    expect(stepView(tf)).toEqual({ library: tf.payload.library, applied: tf.payload.applied, updates: [] });
    expect(stepView(withPayload({ kind: 'gradient', training: [metrics] }))).toEqual({ applied: [], updates: [metrics] });
    expect(stepView(withPayload({ kind: 'lora', training: [metrics], refreshMs: 12 }))).toEqual({ applied: [], updates: [metrics] });
    const routing = { state: {}, probabilities: { short: { a: 1 } }, stats: { updated: true } };
    expect(stepView(withPayload({ kind: 'router', routing }))).toEqual({ applied: [], updates: [], routing });
    expect(stepView(withPayload({ kind: 'best-of-g', picks: [] }))).toEqual({ applied: [], updates: [] });
  });
});

describe('kindView', () => {
  it('gives each kind its own settings rows and library flag', () => {
    expect(kindView(lessons).settings(lessons)).toEqual({ 'Experiences per prompt': 'all that fit' });
    const retrieving = { ...lessons, config: { ...lessons.config, retrieveExperiences: 1 } } as typeof lessons;
    expect(kindView(retrieving).settings(retrieving)).toEqual({ 'Experiences per prompt': '1 (the closest)' });
    expect(kindView(gradient).settings(gradient)).toEqual({ 'Learning rate': '0.02', 'Adapter rank': '4', 'Updates per step': '3' });
    expect(kindView(router).settings(router)).toEqual({ 'Learning rate': '0.5' });
    expect(kindView(lora).settings(lora)).toEqual({ 'Learning rate': '0.005', 'Adapter rank': '2', 'Updates per step': '1' });
    expect([lessons, gradient, lora, router].map((r) => kindView(r).keepsLibrary)).toEqual([true, false, false, false]);
    expect([lessons, gradient, lora, router].map((r) => trainsAdapter(r))).toEqual([false, true, true, false]);
    expect(kindView(lora).loss(lora)).toEqual({ lossType: 'grpo' });
    expect(kindView(gradient).loss(gradient)).toEqual({ lossType: 'dapo' });
    expect(kindView(router).unscorable).toMatch(/several prompt variants/);
    expect(kindView(lessons).unscorable).toBeUndefined();
  });

  it('says what happens after a group’s advantages, a flat group included', () => {
    const advantages = (zeroSpread: boolean): PlaygroundEvent => ({ type: 'advantages', step: 1, epoch: 1, item: 0, advantages: [0, 0], stats: { scorable: 2, mean: 1, std: 0, spread: 0 }, zeroSpread });
    expect(stageAfter(advantages(false), lessons)).toBe('The critic is summarising each completion of prompt #1');
    expect(stageAfter(advantages(false), undefined)).toMatch(/keeping its best completion/);
    expect(stageAfter(advantages(false), gradient)).toMatch(/the adapter is updated/);
    expect(stageAfter(advantages(true), gradient)).toMatch(/nothing to learn/);
    expect(stageAfter(advantages(false), lora)).toMatch(/LoRA on every layer is updated/);
    expect(stageAfter(advantages(true), router)).toMatch(/rewards handed to the router/);
  });
});

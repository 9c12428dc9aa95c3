/**
 * The built-in methods' record types in one import: each kind's config, step payload and run
 * record (importing this also brings each kind into the store's `RunKinds`). Types only.
 */
import type { RunRecordOf } from '../store/records.js';

export type * from './training-free/record.js';
export type * from './gradient/record.js';
export type * from './lora/record.js';
export type * from './router/record.js';
export type { TrainingConfig, TrainingPayload } from './grpo-record.js';

export type TrainingFreeRunRecord = RunRecordOf<'training-free'>;
export type GradientRunRecord = RunRecordOf<'gradient'>;
export type LoraRunRecord = RunRecordOf<'lora'>;
export type RouterRunRecord = RunRecordOf<'router'>;

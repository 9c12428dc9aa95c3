/**
 * `webgrpo train`'s flag values as options: the method, data and outputs the flags name, checked
 * against each other; numbers checked as the usage says, the adapter flags (--rank, --alpha,
 * --target-modules) as the gradient or lora method's options, and the library flags (--retrieve,
 * --max-exemplars) as the training-free method's.
 */

import type { JsonlFormat } from '../export/jsonl.js';
import { methodKinds } from '../methods/registry.js';
import type { Trains } from '../run/method.js';

/** A command line the user can fix: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}

/** The flags that name the method, the data and the outputs, as parseArgs returns them. */
export interface MethodFlags {
  method?: string;
  mode?: string;
  task?: string;
  dataset?: string;
  'peft-out'?: string;
  'export-format': string;
}

/**
 * The run kind and the export format the flags ask for, checked: one of --task or --dataset for
 * a new run (`resumedKind` absent), a known method, --peft-out only for LoRA.
 */
export function checkTrainFlags(values: MethodFlags, resumedKind: string | undefined): { kind: string; format: JsonlFormat } {
  if (resumedKind === undefined && (values.task === undefined) === (values.dataset === undefined)) {
    throw new UsageError('Give one of --task <name> or --dataset <file.jsonl> (or --resume <id>).');
  }
  const kind = resumedKind ?? methodKind(values);
  if (values['peft-out'] !== undefined && kind !== 'lora') throw new UsageError('--peft-out writes a LoRA adapter; it is an option of --method lora.');
  const format = values['export-format'];
  if (format !== 'standard' && format !== 'conversational') throw new UsageError(`--export-format must be standard or conversational, got "${format}".`);
  return { kind, format };
}

/** The run kind `--method` (or `--mode`) names. */
function methodKind(values: MethodFlags): string {
  const name = values.method ?? values.mode ?? 'lessons';
  if (values.method !== undefined && values.mode !== undefined && values.method !== values.mode) {
    throw new UsageError(`--method ${values.method} and --mode ${values.mode} disagree; give one.`);
  }
  if (name === 'lessons' || name === 'exemplars') return 'training-free';
  if (values.mode !== undefined) throw new UsageError(`--mode must be lessons or exemplars, got "${values.mode}".`);
  if (!methodKinds().includes(name)) throw new UsageError(`Unknown method "${name}"; choose lessons, exemplars, ${methodKinds().filter((k) => k !== 'training-free').join(', ')}.`);
  return name;
}

/** The adapter flags, as parseArgs returns them. */
export interface AdapterFlags {
  rank?: string;
  alpha?: string;
  'target-modules'?: string;
}

export function int(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new UsageError(`--${name} expects an integer, got "${value}".`);
  return n;
}

export function num(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} expects a number, got "${value}".`);
  return n;
}

/** `--rank`, `--alpha`, `--target-modules` as the options of the adapter the method trains (`Method.trains`). */
export function adapterOptions(trains: Trains | undefined, values: AdapterFlags): Record<string, unknown> {
  const rank = int(values.rank, 'rank');
  if (trains === 'head') {
    if (values.alpha !== undefined || values['target-modules'] !== undefined) throw new UsageError('--alpha and --target-modules are LoRA options (--method lora); the head adapter takes --rank.');
    return rank !== undefined ? { head: { rank } } : {};
  }
  if (trains !== 'layers') {
    if (rank !== undefined || values.alpha !== undefined || values['target-modules'] !== undefined) throw new UsageError('--rank, --alpha and --target-modules are options of --method gradient and lora.');
    return {};
  }
  const targetModules = values['target-modules']?.split(',').map((m) => m.trim());
  const alpha = num(values.alpha, 'alpha');
  return { lora: { ...(rank !== undefined ? { r: rank } : {}), ...(alpha !== undefined ? { alpha } : {}), ...(targetModules ? { targetModules } : {}) } };
}

/** The library flags, as parseArgs returns them. */
export interface LibraryFlags {
  retrieve?: string;
  'max-exemplars'?: string;
}

/** `--retrieve` and `--max-exemplars` as a training-free run's options; an error on any other method. */
export function libraryOptions(trainingFree: boolean, values: LibraryFlags): Record<string, unknown> {
  if (!trainingFree) {
    if (values.retrieve !== undefined || values['max-exemplars'] !== undefined) throw new UsageError('--retrieve and --max-exemplars are options of --method lessons and exemplars.');
    return {};
  }
  const retrieve = int(values.retrieve, 'retrieve');
  const maxExemplars = int(values['max-exemplars'], 'max-exemplars');
  return { ...(retrieve !== undefined ? { retrieveExperiences: retrieve } : {}), ...(maxExemplars !== undefined ? { maxExemplars } : {}) };
}

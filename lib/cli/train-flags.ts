/**
 * `webgrpo train`'s flag values as options: numbers checked as the usage says, and the adapter
 * flags (--rank, --alpha, --target-modules) as the gradient or lora method's options.
 */

/** A command line the user can fix: printed with a pointer to --help, exit code 2. */
export class UsageError extends Error {}

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

/** Methods whose runs train the policy's own weights or adapter. */
export const TRAINS_POLICY = new Set(['gradient', 'lora']);

/** `--rank`, `--alpha`, `--target-modules` as the method's adapter options. */
export function adapterOptions(kind: string, values: AdapterFlags): Record<string, unknown> {
  const rank = int(values.rank, 'rank');
  if (kind === 'gradient') {
    if (values.alpha !== undefined || values['target-modules'] !== undefined) throw new UsageError('--alpha and --target-modules are LoRA options (--method lora); the head adapter takes --rank.');
    return rank !== undefined ? { head: { rank } } : {};
  }
  if (kind !== 'lora') {
    if (rank !== undefined || values.alpha !== undefined || values['target-modules'] !== undefined) throw new UsageError('--rank, --alpha and --target-modules are options of --method gradient and lora.');
    return {};
  }
  const targetModules = values['target-modules']?.split(',').map((m) => m.trim());
  const alpha = num(values.alpha, 'alpha');
  return { lora: { ...(rank !== undefined ? { r: rank } : {}), ...(alpha !== undefined ? { alpha } : {}), ...(targetModules ? { targetModules } : {}) } };
}

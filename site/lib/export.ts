/**
 * A run as files: training data (TRL's prompt-completion JSONL, one line per completion with its
 * reward, advantage and group), the library or the adapter (JSON), or the whole run (webgrpo's
 * run export).
 */
import { exportRun, runGroups, toJsonl, type ExperienceLibrary, type RunBundle, type Store } from '../../lib/index.js';
import type { AdapterCheckpoint } from '../../lib/grad.js';
import { libraryAfter } from './view.js';

/**
 * Every finished group (the prompt as the model saw it, library included), one line per completion
 * with its id; a router run's lines also name the variant that wrote them.
 */
export function runJsonl(bundle: RunBundle): string {
  const groups = runGroups(bundle);
  const chat = groups.some((g) => g.messages);
  const include = ['reward', 'advantage', 'groupId', 'completionId', ...(bundle.run.kind === 'router' ? (['arm'] as const) : [])] as const;
  return toJsonl(groups, { format: chat ? 'conversational' : 'standard', include });
}

export function libraryJson(library: ExperienceLibrary, runId: string, step: number): string {
  return `${JSON.stringify({ format: 'webgrpo.library', runId, step, library }, null, 2)}\n`;
}

export async function runJson(store: Store, runId: string): Promise<string> {
  return `${JSON.stringify(await exportRun(store, runId), null, 2)}\n`;
}

/** Saves text or bytes as a file through the browser's download. */
export function download(content: string | Uint8Array<ArrayBuffer>, filename: string, type: string): void {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = filename;
  link.rel = 'noopener';
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function fileStem(bundle: RunBundle): string {
  return `webgrpo-${bundle.run.config.task ?? 'dataset'}-${bundle.run.id.slice(0, 8)}`;
}

/** A gradient run's adapter (its last checkpoint's), as the adapter file `readAdapterFile` and `attachAdapter` take. */
export function adapterJson(checkpoint: AdapterCheckpoint): string {
  return `${JSON.stringify(checkpoint.adapter, null, 2)}\n`;
}

/** The run id an exported run file names, when it names one (importRun checks the rest). */
export function exportedRunId(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { run?: { id?: unknown } } | null)?.run?.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

// The selected run's downloads, as the run header and the adapter panel offer them.

export function downloadTrainingData(bundle: RunBundle): void {
  download(runJsonl(bundle), `${fileStem(bundle)}.jsonl`, 'application/jsonl');
}

/**
 * The adapter of a gradient or lora run's last committed step: the head adapter's file, or a
 * LoRA adapter as PEFT's folder in a zip (for `PeftModel.from_pretrained`), whose writer loads
 * only when asked for.
 */
export async function downloadAdapter(bundle: RunBundle): Promise<void> {
  const checkpoint = bundle.adapter;
  if (!checkpoint) return;
  const stem = `${fileStem(bundle)}-adapter-step${checkpoint.step}`;
  if (checkpoint.adapter.target !== 'decoder') return download(adapterJson(checkpoint), `${stem}.json`, 'application/json');
  const { peftZip } = await import('./peft-zip.js');
  download(peftZip(checkpoint, bundle.run.config.policy.model), `${stem}-peft.zip`, 'application/zip');
}

/** The library as it was after `step`. */
export function downloadLibrary(bundle: RunBundle, step: number): void {
  download(libraryJson(libraryAfter(bundle, step), bundle.run.id, step), `${fileStem(bundle)}-library-step${step}.json`, 'application/json');
}

export async function downloadRun(store: Store, bundle: RunBundle): Promise<void> {
  download(await runJson(store, bundle.run.id), `${fileStem(bundle)}-run.json`, 'application/json');
}

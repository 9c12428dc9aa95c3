/** A stored LoRA run's adapter written as PEFT's folder: `webgrpo export --peft` and `webgrpo train --peft-out`. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runPeftAdapter, type RunPeftAdapter } from '../export/peft.js';
import { PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE } from '../lora/peft.js';
import { exportRun } from '../store/run-export.js';
import type { Store } from '../store/store.js';

export async function writePeftFolder(peft: RunPeftAdapter, runId: string, dir: string, stderr: (text: string) => void): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, PEFT_CONFIG_FILE), peft.folder[PEFT_CONFIG_FILE]);
  await writeFile(join(dir, PEFT_WEIGHTS_FILE), peft.folder[PEFT_WEIGHTS_FILE]);
  stderr(`Wrote run ${runId}'s LoRA adapter as PEFT's folder to ${dir} (base_model_name_or_path: ${peft.baseModel})\n`);
  if (peft.note) stderr(`Note: ${peft.note}\n`);
}

/** `--peft-out`: the stored run's adapter after its last commit; a run stopped before its first has none, and gets no error on top. */
export async function writeTrainedPeftFolder(store: Store, runId: string, dir: string, stderr: (text: string) => void): Promise<void> {
  if (!(await store.getRun(runId))) return;
  const bundle = await exportRun(store, runId);
  if (bundle.adapter) await writePeftFolder(runPeftAdapter(bundle), runId, dir, stderr);
}

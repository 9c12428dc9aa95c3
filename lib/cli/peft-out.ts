/** A stored LoRA run's adapter written as PEFT's folder: `webgrpo export --peft` and `webgrpo train --peft-out`. */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runPeftAdapter } from '../export/peft.js';
import { PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE } from '../lora/peft.js';
import type { RunBundle } from '../store/records.js';

export async function writePeftFolder(bundle: RunBundle, dir: string, baseModel: string | undefined, stderr: (text: string) => void): Promise<void> {
  const peft = runPeftAdapter(bundle, baseModel !== undefined ? { baseModel } : {});
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, PEFT_CONFIG_FILE), peft.folder[PEFT_CONFIG_FILE]);
  await writeFile(join(dir, PEFT_WEIGHTS_FILE), peft.folder[PEFT_WEIGHTS_FILE]);
  stderr(`Wrote run ${bundle.run.id}'s LoRA adapter as PEFT's folder to ${dir} (base_model_name_or_path: ${peft.baseModel})\n`);
  if (peft.note) stderr(`Note: ${peft.note}\n`);
}

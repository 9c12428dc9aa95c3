/**
 * A LoRA run's adapter as PEFT's folder in one zip (`adapter_config.json` and
 * `adapter_model.safetensors` at its root): unzipped, `PeftModel.from_pretrained(model, folder)`
 * loads it onto the base model, and TRL continues training it. Loaded on a click, apart from the
 * first screen.
 */
import { exportPeftAdapter, PEFT_CONFIG_FILE, PEFT_WEIGHTS_FILE, readLoraAdapterFile, type AdapterCheckpoint } from '../../lib/grad.js';
import { zipStored } from './zip.js';

/** The name a base model goes by in `base_model_name_or_path`: a hub id as it is, a bundled model by its folder. */
export function peftBaseModel(model: string): string {
  const bundled = /(?:^|\/)models\/([^/]+)\/?$/.exec(model);
  return bundled ? bundled[1] : model;
}

export function peftZip(checkpoint: AdapterCheckpoint, model: string): Uint8Array<ArrayBuffer> {
  const adapter = readLoraAdapterFile(checkpoint.adapter, 'checkpoint.adapter');
  const folder = exportPeftAdapter(adapter, { baseModel: peftBaseModel(model) });
  return zipStored([
    { name: PEFT_CONFIG_FILE, data: new TextEncoder().encode(folder[PEFT_CONFIG_FILE]) },
    { name: PEFT_WEIGHTS_FILE, data: folder[PEFT_WEIGHTS_FILE] },
  ]);
}

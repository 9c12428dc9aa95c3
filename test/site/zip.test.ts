/**
 * The playground's zip writer and its PEFT download, read back by an independent reader
 * (zip-reader.ts): stored entries with UTF-8 names, empty and binary files, the standard CRC-32;
 * and a LoRA checkpoint as PEFT's folder, with PEFT's tensor names and shapes.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLoraAdapter } from '../../lib/lora/adapter.js';
import { writeLoraCheckpoint } from '../../lib/lora/format.js';
import { readDecoderWeights } from '../../lib/weights/read-onnx.js';
import { loraOptimizerState } from '../../lib/lora/optimizer.js';
import { peftBaseModel, peftZip } from '../../site/lib/peft-zip.js';
import { crc32, zipStored } from '../../site/lib/zip.js';
import { TINY_DIR } from '../onnx/fixtures.js';
import { readZip, safetensorsHeader } from './zip-reader.js';

describe('zipStored', () => {
  it('writes entries an independent reader gets back byte for byte', () => {
    const binary = Uint8Array.from({ length: 70_001 }, (_, i) => (i * 2654435761) >>> 24);
    const entries = [
      { name: 'adapter_config.json', data: new TextEncoder().encode('{"r": 8}\n') },
      { name: 'folder/naïve é.bin', data: binary },
      { name: 'empty', data: new Uint8Array() },
    ];
    const files = readZip(zipStored(entries, new Date(2026, 0, 2, 3, 4, 6)));
    expect([...files.keys()]).toEqual(entries.map((e) => e.name));
    for (const entry of entries) expect(files.get(entry.name)).toEqual(entry.data);
  });

  it('computes the standard CRC-32', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array())).toBe(0);
  });
});

describe('peftZip', () => {
  it("holds PEFT's folder: adapter_config.json and adapter_model.safetensors with PEFT's tensor names", async () => {
    const graph = new Uint8Array(await readFile(join(TINY_DIR, 'onnx/model.onnx')));
    const config = JSON.parse(await readFile(join(TINY_DIR, 'config.json'), 'utf8')) as Record<string, unknown>;
    const weights = await readDecoderWeights(graph, { config });
    const adapter = createLoraAdapter(weights.shape, { r: 2, alpha: 4, targetModules: ['q_proj', 'down_proj'], seed: 1 });
    const checkpoint = writeLoraCheckpoint(adapter, loraOptimizerState(adapter), 3);
    const files = readZip(peftZip(checkpoint, '/models/webgrpo-tiny/'));
    expect([...files.keys()].sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const peft = JSON.parse(new TextDecoder().decode(files.get('adapter_config.json')));
    expect(peft).toMatchObject({ peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: ['q_proj', 'down_proj'], base_model_name_or_path: 'webgrpo-tiny' });
    const tensors = safetensorsHeader(files.get('adapter_model.safetensors')!);
    const { numLayers, hiddenSize, intermediateSize } = weights.shape;
    expect(Object.keys(tensors)).toHaveLength(numLayers * 2 * 2);
    expect(tensors['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight']).toMatchObject({ dtype: 'F32', shape: [2, hiddenSize] });
    expect(tensors[`base_model.model.model.layers.${numLayers - 1}.mlp.down_proj.lora_B.weight`]).toMatchObject({ dtype: 'F32', shape: [hiddenSize, 2] });
    expect(tensors['base_model.model.model.layers.0.mlp.down_proj.lora_A.weight'].shape).toEqual([2, intermediateSize]);
  });

  it('names a bundled model by its folder and a hub model by its id', () => {
    expect(peftBaseModel('/models/webgrpo-skill/')).toBe('webgrpo-skill');
    expect(peftBaseModel('http://127.0.0.1:5173/models/webgrpo-tiny')).toBe('webgrpo-tiny');
    expect(peftBaseModel('HuggingFaceTB/SmolLM2-135M-Instruct')).toBe('HuggingFaceTB/SmolLM2-135M-Instruct');
  });
});

/**
 * `webgrpo export <run-id>`: a stored run handed to the trainers elsewhere, each in the form its
 * consumer loads as it is: verl's parquet (`--verl`), TRL GRPOTrainer's prompt dataset (`--trl`),
 * the run's completions as TRL prompt-completion JSONL (`--rollouts`) and as preference pairs for
 * TRL's offline trainers (`--preferences`), and a LoRA run's adapter as PEFT's folder (`--peft`). The standard format renders chat prompts through the model's chat
 * template, so only it loads a model (the run's, or `--model`).
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Policy } from '../core/policy.js';
import { writeJsonlFile } from '../export/file.js';
import type { JsonlFormat } from '../export/jsonl.js';
import { runPeftAdapter } from '../export/peft.js';
import { toPreferenceJsonl } from '../export/preferences.js';
import { renderPrompts, toPromptJsonl } from '../export/prompts.js';
import { runGroups } from '../export/run.js';
import { openFileStore } from '../node.js';
import type { RunBundle } from '../store/records/index.js';
import { modelPath } from './model-arg.js';
import { writePeftFolder } from './peft-out.js';
import { UsageError } from './train-flags.js';

/** Where output goes and how a model loads (for the standard format); tests replace these. */
export interface ExportIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  loadModel: (model: string) => Promise<Policy>;
}

const HELP = `Usage: webgrpo export <run-id> [options]

A stored run (webgrpo train) as the files other trainers load as they are.

  --store <dir>          where runs are kept (default .webgrpo/runs)
  --verl <file>          verl's parquet: one row per dataset item, the user's prompt, the answer as
                         reward_model.ground_truth, the run's replies in extra_info
                         (data.train_files=<file>; reward files: python/webgrpo_rewards/ in the package)
  --data-source <name>   verl's data_source (default: the run's task, else webgrpo)
  --trl <file>           TRL GRPOTrainer's dataset: one JSON line per item, prompt, answer, item_id
  --rollouts <file>      every completion as TRL prompt-completion JSONL with reward, advantage,
                         group_id, completion_id (and arm, on router runs)
  --preferences <file>   each group's best and worst completions as TRL preference pairs
                         (prompt, chosen, rejected: DPOTrainer's dataset)
  --format <f>           conversational (default; role/content lists) | standard (plain strings;
                         chat prompts rendered through the model's chat template)
  --model <name|dir|id>  the model whose chat template renders standard prompts (default: the run's)
  --peft <dir>           a LoRA run's adapter as PEFT's folder (adapter_config.json and
                         adapter_model.safetensors; PeftModel.from_pretrained(model, dir))
  --base-model <id>      its base_model_name_or_path (default: the run's model id)
  -h, --help             this text
`;

const OPTIONS = {
  store: { type: 'string', default: '.webgrpo/runs' },
  verl: { type: 'string' },
  'data-source': { type: 'string' },
  trl: { type: 'string' },
  rollouts: { type: 'string' },
  preferences: { type: 'string' },
  format: { type: 'string', default: 'conversational' },
  model: { type: 'string' },
  peft: { type: 'string' },
  'base-model': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

export async function run(argv: string[], io: ExportIo = nodeIo()): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: true });
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\nRun \`webgrpo export --help\` for the options.\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  try {
    if (positionals.length !== 1) throw new UsageError('Give the id of one stored run: webgrpo export <run-id> (see `webgrpo train --list`).');
    if ([values.verl, values.trl, values.rollouts, values.preferences, values.peft].every((v) => v === undefined)) throw new UsageError('Say what to write: --verl, --trl, --rollouts, --preferences and/or --peft.');
    const format = values.format;
    if (format !== 'standard' && format !== 'conversational') throw new UsageError(`--format must be standard or conversational, got "${format}".`);
    const store = await openFileStore(resolve(values.store));
    let bundle: RunBundle;
    try {
      if (!(await store.getRun(positionals[0]))) throw new UsageError(`No run "${positionals[0]}" in ${store.root}; see \`webgrpo train --list\`.`);
      bundle = await store.readBundle(positionals[0]);
    } finally {
      await store.close();
    }
    await write(bundle, values, format, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`${error.message}\n\nRun \`webgrpo export --help\` for the options.\n`);
      return 2;
    }
    io.stderr(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

async function write(bundle: RunBundle, values: Values, format: JsonlFormat, io: ExportIo): Promise<void> {
  const runId = bundle.run.id;
  // Made first: a run with no adapter PEFT loads is refused before any other file is written.
  const peft = values.peft !== undefined ? runPeftAdapter(bundle, values['base-model'] !== undefined ? { baseModel: values['base-model'] } : {}) : undefined;
  if (values.verl !== undefined) {
    const { exportParquet } = await import('../parquet.js');
    await writeFile(values.verl, exportParquet(bundle, values['data-source'] !== undefined ? { dataSource: values['data-source'] } : {}));
    io.stderr(`Wrote ${bundle.items.length} prompts of run ${runId} as verl parquet to ${values.verl}\n`);
  } else if (values['data-source'] !== undefined) {
    throw new UsageError('--data-source names verl\'s data_source; give it with --verl.');
  }
  if (values.trl !== undefined || values.rollouts !== undefined || values.preferences !== undefined) {
    const policy = format === 'standard' && needsTemplate(bundle) ? await templateModel(bundle, values.model, io) : undefined;
    try {
      if (values.trl !== undefined) {
        await writeFile(values.trl, await toPromptJsonl(bundle, { format, ...(policy ? { render: policy } : {}) }));
        io.stderr(`Wrote ${bundle.items.length} prompts of run ${runId} as TRL GRPOTrainer data to ${values.trl}\n`);
      }
      const groups = policy ? await renderPrompts(runGroups(bundle), policy) : runGroups(bundle);
      if (values.rollouts !== undefined) {
        const lines = await writeJsonlFile(values.rollouts, groups, { format, include: ['reward', 'advantage', 'groupId', 'completionId', 'arm'] });
        io.stderr(`Wrote ${lines} completions of run ${runId} as TRL JSONL to ${values.rollouts}\n`);
      }
      if (values.preferences !== undefined) {
        const pairs = toPreferenceJsonl(groups, { format });
        await writeFile(values.preferences, pairs);
        io.stderr(`Wrote ${pairs.split('\n').length - 1} preference pairs of run ${runId} (groups with a reward spread) to ${values.preferences}\n`);
      }
    } finally {
      await policy?.dispose();
    }
  }
  if (peft) await writePeftFolder(peft, runId, values.peft!, io.stderr);
}

/** Whether the standard format has chat prompts to render (the dataset's, or a method's). */
function needsTemplate(bundle: RunBundle): boolean {
  return bundle.items.some((item) => item.prompt === undefined) || runGroups(bundle).some((g) => g.prompt === undefined);
}

async function templateModel(bundle: RunBundle, model: string | undefined, io: ExportIo): Promise<Policy> {
  const policy = bundle.run.config.policy;
  const name = model ?? (policy.backend !== 'recorded' && policy.backend !== 'http' ? policy.model : undefined);
  if (name === undefined) {
    throw new UsageError(`--format standard renders chat prompts through the model's chat template, and run ${bundle.run.id}'s model (${policy.model}, ${policy.backend}) has none here: pass --model <dir|id> with its tokenizer, or use --format conversational.`);
  }
  const loaded = await io.loadModel(name);
  if (!loaded.renderPrompt) {
    await loaded.dispose();
    throw new UsageError(`--format standard needs a model that renders chat prompts, and ${name} does not: pass --model <dir|id> of a local model with a chat template, or use --format conversational.`);
  }
  return loaded;
}

function nodeIo(): ExportIo {
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    async loadModel(model) {
      const onnx = await import('../onnx.js');
      return onnx.loadOnnxPolicy({ model: await modelPath(model), device: 'cpu' });
    },
  };
}

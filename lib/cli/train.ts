/**
 * `webgrpo train`: any registered method (training-free lessons or exemplars, gradient, router)
 * from the command line, on a local ONNX model (the bundled tiny one by default, offline), with
 * runs kept in a folder so they survive the process: a progress bar with an ETA, a table per
 * epoch, the final library, `--resume`, `--out`. Methods are started and resumed through the
 * registry (lib/methods/registry.ts), never by name here.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { InvalidInputError, StoreCorruptError, WebgrpoError } from '../errors.js';
import type { EpochExportFile } from '../export/epoch-file.js';
import type { JsonlFormat } from '../export/jsonl.js';
import { recordingPolicy, replayPolicy, type RecordingPolicy } from '../policy/recorded.js';
import type { Policy } from '../core/policy.js';
import { openFileStore, sealUnverified, type FileStore } from '../node.js';
import { runMethod } from '../methods/run-method.js';
import type { RunRecord } from '../store/records/index.js';
import type { LoopMode } from '../methods/training-free/record.js';
import type { RouterArm } from '../methods/router/arm.js';
import type { DatasetItem } from '../core/dataset.js';
import { parseDatasetJsonl } from '../tasks/jsonl.js';
import { builtinTasks, getTask } from '../tasks/index.js';
import { builtinRewards } from '../tasks/rewards.js';
import { Progress, table, type ViewIo } from './train-view.js';
import { adapterOptions, checkTrainFlags, int, libraryOptions, num, UsageError } from './train-flags.js';
import { modelPath } from './model-arg.js';
import { checkOutputPaths, epochExportFile, writeRunOutputs } from './output-paths.js';
import { methodOf, type RegisteredMethod } from '../methods/registry.js';
import { resumeRun, startRun } from '../run/driver.js';
import type { MethodTypes } from '../run/method.js';
import type { LoopHandles } from '../run/options.js';
import type { RewardFunction } from '../core/reward.js';
import type { Run } from '../run/run.js';
import type { CliEvent } from './train-view.js';

/** Where output goes and how models load; tests replace these. */
export interface TrainIo extends ViewIo {
  /** Loads `--model` (undefined: the bundled model); `trainable`: with its hidden states, for gradient runs. */
  loadModel: (model: string | undefined, device: string, progress: (text: string) => void, options?: { trainable?: boolean }) => Promise<Policy>;
  /** Fires on Ctrl-C. */
  interrupt: AbortSignal;
}

const HELP = `Usage: webgrpo train [options]

GRPO on a local model. Training-Free GRPO (arXiv 2510.08191, the default): the model's best and
worst attempts are compared and turned into an experience library that later prompts carry, no
weights change. Gradient GRPO trains an adapter on the model's LM head; LoRA GRPO trains LoRA on
the attention and MLP projections of every layer. The router learns which prompt variant (arm) to
use per kind of question.

Model
  --model <name|dir|id>  webgrpo-tiny or webgrpo-skill (the bundled models), an ONNX model folder
                         or a Hugging Face id (default: webgrpo-tiny)
  --device <name>        auto | cpu | wasm | webgpu (default auto: the CPU in Node)
  --replay <file>        answer from a recording instead of a model (offline demos, tests)
  --record <file>        save every model output of this run to a recording

Data
  --task <name>          built-in task: ${Object.keys(builtinTasks).join(', ')}
  --size <n>             items to generate for the task (default: the task's own)
  --dataset <file>       JSONL, one {"prompt" | "messages", "answer"} per line
  --reward <names>       rewards for --dataset, comma-separated: ${Object.keys(builtinRewards).join(', ')}
                         (default exact,similarity)

Loop
  --method <m>           lessons (a critic writes lessons) | exemplars (best outputs kept as
                         examples) | gradient (an LM-head adapter, trained) | lora (LoRA on every
                         layer, trained; sampling follows it) | router (learns an arm per query
                         class). Default lessons; exemplars on the bundled model, whose random
                         weights cannot write a critique.
  --rank <r>             gradient, lora: the adapter's rank (default 8)
  --alpha <a>            lora: the scale's numerator, s = alpha / r (default 16)
  --target-modules <m>   lora: comma-separated projections (default all: q_proj,k_proj,v_proj,
                         o_proj,gate_proj,up_proj,down_proj)
  --mode <mode>          lessons | exemplars: the same as --method
  --retrieve <k>         lessons, exemplars: show each prompt only the k experiences closest to
                         it (shared words and word pairs; default 0: all that fit)
  --max-exemplars <n>    exemplars: most exemplars kept (default 8)
  --arms <file>          router: JSON array of arms {id, label, instruction?, temperatureScale?}
                         (default: as asked, terse, cool, hot)
  --epochs <n>           passes over the data (default 3)
  --group <n>            completions per item (default 5)
  --batch <n>            items per step; the library is updated once per step (default 4)
  --concurrency <n>      items worked on at once (default 1)
  --temperature <t>      rollout temperature (default 0.7)
  --max-new-tokens <n>   per completion (default 256; 48 on the bundled model)
  --seed <n>             seed of the data order and all sampling (default 0)

Runs
  --store <dir>          where runs are kept (default .webgrpo/runs)
  --run-id <id>          name the new run (default: a random id)
  --resume <id>          continue an interrupted run from its first unfinished item
  --out <file>           write the whole run as JSON when it ends
  --export-jsonl <file>  after every epoch, append its completions to this JSONL file as TRL
                         training data (one line per completion, with reward, advantage,
                         group_id and completion_id); a resumed run appends the epochs it finishes
  --peft-out <dir>       lora: when the run ends, write its adapter as PEFT's folder (as
                         webgrpo export --peft does)
  --export-format <f>    conversational (default; role/content lists) | standard (plain
                         strings; chat prompts rendered through the model's chat template)
  --list                 list the stored runs
  --seal-unverified      seal, once, the files of a store written by webgrpo before records carried
                         checksums (otherwise read as damaged); only for files you trust as they are
  --quiet                no progress bar
  -h, --help             this text
`;

const OPTIONS = {
  model: { type: 'string' },
  device: { type: 'string', default: 'auto' },
  replay: { type: 'string' },
  record: { type: 'string' },
  task: { type: 'string' },
  size: { type: 'string' },
  dataset: { type: 'string' },
  reward: { type: 'string' },
  method: { type: 'string' },
  mode: { type: 'string' },
  arms: { type: 'string' },
  rank: { type: 'string' },
  retrieve: { type: 'string' },
  'max-exemplars': { type: 'string' },
  alpha: { type: 'string' },
  'target-modules': { type: 'string' },
  epochs: { type: 'string' },
  group: { type: 'string' },
  batch: { type: 'string' },
  concurrency: { type: 'string' },
  temperature: { type: 'string' },
  'max-new-tokens': { type: 'string' },
  seed: { type: 'string' },
  store: { type: 'string', default: '.webgrpo/runs' },
  'run-id': { type: 'string' },
  resume: { type: 'string' },
  out: { type: 'string' },
  'export-jsonl': { type: 'string' },
  'export-format': { type: 'string', default: 'conversational' },
  'peft-out': { type: 'string' },
  list: { type: 'boolean', default: false },
  'seal-unverified': { type: 'boolean', default: false },
  quiet: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export async function run(argv: string[], io: TrainIo = nodeIo()): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    io.stderr(`${(error as Error).message}\n\nRun \`webgrpo train --help\` for the options.\n`);
    return 2;
  }
  if (values.help) {
    io.stdout(HELP);
    return 0;
  }
  try {
    if (values['seal-unverified']) {
      const files = await sealUnverified(resolve(values.store));
      io.stdout(`Sealed ${files.length} file(s) written without checksums in ${resolve(values.store)}; every later edit of them is found.\n`);
      return 0;
    }
    const store = await openFileStore(resolve(values.store));
    try {
      if (values.list) return await listRuns(store, io);
      return await train(values, store, io);
    } finally {
      await store.close();
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`${error.message}\n\nRun \`webgrpo train --help\` for the options.\n`);
      return 2;
    }
    io.stderr(`\nError: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

/**
 * `webgrpo train` without `--list`: the flags checked, the model loaded, the run started (or
 * resumed) through the registry and followed to its end, then its outputs written. The exit code
 * is 0 (completed), 1 (stopped by a failure), or 130 (interrupted).
 */
async function train(values: Values, store: FileStore, io: TrainIo): Promise<number> {
  await checkOutputPaths({ out: values.out, 'export-jsonl': values['export-jsonl'] }, store.root);
  const resumed = values.resume !== undefined ? await store.getRun(values.resume) : undefined;
  if (values.resume !== undefined && !resumed) throw new UsageError(`No run "${values.resume}" in ${store.root}; see \`webgrpo train --list\`.`);
  const { kind, format } = checkTrainFlags(values, resumed?.kind);
  const method = methodOf(kind);
  if (!method) throw new UsageError(`No method runs "${kind}" runs here.`);

  const policy = await loadPolicy(values, method, resumed, io);
  const recorder: RecordingPolicy | undefined = values.record !== undefined ? recordingPolicy(policy) : undefined;
  // A method that trains the policy trains it itself, so it is never wrapped in a recorder.
  const active = recorder && !method.trains ? recorder : policy;
  io.stderr(`Model: ${policy.info.model} (${policy.info.backend}${policy.info.note ? `; ${policy.info.note}` : ''})\n`);

  const handles = { policy: active, store, signal: io.interrupt };
  const { loop, exported } = resumed ? await resumeFromFlags(values, method, resumed, handles, format, policy, io) : await startFromFlags(values, kind, method, handles, format, policy, io);
  const { status, failure } = await follow(loop, io, values.quiet);
  await writeRunOutputs(store, loop.runId, { out: values.out, record: values.record, peftOut: values['peft-out'] }, { exported, recorder }, io.stderr);
  // A gradient run's trainer holds the adapter; the model is disposed with it.
  await policy.dispose();
  return exitCode(failure, status, `webgrpo train --resume ${loop.runId} --store ${values.store}`, io);
}

/** What starting or resuming a run from the flags gives: the run, and its epochs' JSONL file (`--export-jsonl`). */
interface FlagsRun {
  loop: Run<CliEvent, unknown>;
  exported: EpochExportFile | undefined;
}

/** The handles every run of the command takes: the (maybe recording) policy, the store, Ctrl-C. */
interface CliHandles {
  policy: Policy;
  store: FileStore;
  signal: AbortSignal;
}

/** The model: a recording, the given model, or (resuming) the one the run used; with its hidden states where the method trains its head. */
async function loadPolicy(values: Values, method: RegisteredMethod, resumed: RunRecord | undefined, io: TrainIo): Promise<Policy> {
  if (values.replay !== undefined) return replayPolicy(await readFile(values.replay, 'utf8'));
  const model = values.model ?? (resumed && resumed.config.policy.backend !== 'recorded' ? resumed.config.policy.model : undefined);
  const policy = await io.loadModel(model, values.device, (text) => io.interactive && !values.quiet && io.stderr(`\r${text}`.padEnd(60)), { trainable: method.trains === 'head' });
  if (io.interactive && !values.quiet) io.stderr('\r'.padEnd(61) + '\r');
  return policy;
}

/** `--resume`: the stored run continued by its method, with its own rewards; `--export-jsonl` writes the epochs it finishes. */
async function resumeFromFlags(values: Values, method: RegisteredMethod, resumed: RunRecord, handles: CliHandles, format: JsonlFormat, policy: Policy, io: TrainIo): Promise<FlagsRun> {
  const { store } = handles;
  const exported = values['export-jsonl'] !== undefined ? await epochExportFile(values['export-jsonl'], format, await store.getItems(resumed.id), policy, { store, runId: resumed.id }) : undefined;
  const loop = resumeRun<CliEvent, unknown, LoopHandles>([method], resumed.id, { ...handles, rewards: rewardsOf(resumed), onEpoch: exported?.hook });
  io.stderr(`Resuming run ${resumed.id} (${resumed.config.task ?? 'dataset'}, ${runMethod(resumed)}).\n`);
  return { loop, exported };
}

/** A new run of `method` on the task or dataset the flags name, with the loop's settings and the method's own options from them. */
async function startFromFlags(values: Values, kind: string, method: RegisteredMethod, handles: CliHandles, format: JsonlFormat, policy: Policy, io: TrainIo): Promise<FlagsRun> {
  const bundled = (values.model === undefined || values.model === 'webgrpo-tiny') && values.replay === undefined;
  const mode: LoopMode | undefined = kind === 'training-free' ? ((values.method ?? values.mode ?? (bundled ? 'exemplars' : 'lessons')) as LoopMode) : undefined;
  if (bundled && kind === 'training-free' && values.method === undefined && values.mode === undefined) {
    io.stderr('The bundled model has random weights and cannot write critiques: using --method exemplars (pass --method lessons to try anyway).\n');
  }
  const { dataset, rewards } = await datasetOf(values);
  const exported = values['export-jsonl'] !== undefined ? await epochExportFile(values['export-jsonl'], format, dataset, policy) : undefined;
  // Each method takes the options it knows (its `create` reads them) and ignores the rest.
  const loop = startRun<CliEvent, MethodTypes>(method, {
    ...handles,
    dataset,
    rewards,
    ...(mode ? { mode } : {}),
    ...(kind === 'router' ? { arms: values.arms !== undefined ? JSON.parse(await readFile(values.arms, 'utf8')) : CLI_ARMS } : {}),
    ...adapterOptions(method.trains, values),
    ...libraryOptions(kind === 'training-free', values),
    task: values.task,
    epochs: int(values.epochs, 'epochs'),
    groupSize: int(values.group, 'group'),
    batchSize: int(values.batch, 'batch'),
    concurrency: int(values.concurrency, 'concurrency'),
    temperature: num(values.temperature, 'temperature'),
    maxNewTokens: int(values['max-new-tokens'], 'max-new-tokens') ?? (bundled ? 48 : undefined),
    seed: int(values.seed, 'seed'),
    runId: values['run-id'],
    onEpoch: exported?.hook,
  });
  io.stderr(`Run ${loop.runId} (${values.task ?? values.dataset}, ${mode ?? kind}) in ${handles.store.root}\n`);
  return { loop, exported };
}

/** `--task` (its dataset and rewards) or `--dataset` with `--reward`'s built-in rewards. */
async function datasetOf(values: Values): Promise<{ dataset: DatasetItem[]; rewards: RewardFunction[] }> {
  if (values.task !== undefined) {
    const task = getTask(values.task);
    return { dataset: task.dataset({ size: int(values.size, 'size'), seed: int(values.seed, 'seed') }), rewards: task.rewards };
  }
  const path = values.dataset as string;
  const dataset = parseDatasetJsonl(await readFile(path, 'utf8'), path);
  const rewards = (values.reward ?? 'exact,similarity').split(',').map((name) => {
    const reward = builtinRewards[name.trim()];
    if (!reward) throw new UsageError(`Unknown reward "${name}"; choose from ${Object.keys(builtinRewards).join(', ')}.`);
    return reward;
  });
  return { dataset, rewards };
}

/** The run's events shown as they come, to its end; how it ended (a failure is caught here, for the outputs still to write). */
async function follow(loop: Run<CliEvent, unknown>, io: TrainIo, quiet: boolean): Promise<{ status: string; failure: unknown }> {
  const view = new Progress(io, quiet);
  let status = 'failed';
  let failure: unknown;
  try {
    for await (const event of loop) {
      view.on(event);
      if (event.type === 'run-end') status = event.status;
    }
  } catch (error) {
    failure = error;
  }
  view.finish();
  return { status, failure };
}

/** The exit code of how the run ended, with what to do next (`resume`: the command that continues it). */
function exitCode(failure: unknown, status: string, resume: string, io: TrainIo): number {
  if (failure) {
    if (failure instanceof WebgrpoError && failure.code === 'AlreadyRunning') throw failure;
    io.stderr(`\nThe run stopped: ${failure instanceof Error ? failure.message : String(failure)}\n`);
    // A damaged store is repaired first; resuming it as it is would fail the same way.
    if (!(failure instanceof StoreCorruptError)) io.stderr(`What was committed is kept; resume with: ${resume}\n`);
    return 1;
  }
  if (status === 'aborted') {
    io.stderr(`\nInterrupted. Resume with: ${resume}\n`);
    return 130;
  }
  return 0;
}

/** The router's arms without `--arms`: prompt and sampling variants of the one model (the playground's). */
const CLI_ARMS: readonly RouterArm[] = [
  { id: 'asked', label: 'As asked' },
  { id: 'terse', label: 'Terse', instruction: 'Answer in as few words as possible.' },
  { id: 'cool', label: 'Cool', temperatureScale: 0.5 },
  { id: 'hot', label: 'Hot', temperatureScale: 1.5 },
];

/** The reward functions of a stored run: its built-in task's, or built-in rewards by name. */
function rewardsOf(run: RunRecord): RewardFunction[] {
  if (run.config.task !== undefined && builtinTasks[run.config.task]) return getTask(run.config.task).rewards;
  return run.config.rewards.map(({ name }) => {
    const reward = builtinRewards[name];
    if (!reward) throw new InvalidInputError('rewards', `run "${run.id}" uses the reward "${name}", which is not built in; resume it from your own code.`);
    return reward;
  });
}

/**
 * `--list`: every run with its progress; a run that cannot be read whole is listed as damaged (its
 * steps, or the whole row when its record does not read), and what is wrong goes to stderr with
 * what to do. No resume is offered for it: it would fail the same way.
 */
async function listRuns(store: FileStore, io: TrainIo): Promise<number> {
  const [runs, damaged] = await Promise.all([store.listRuns(), store.listDamaged()]);
  if (runs.length === 0 && damaged.length === 0) {
    io.stdout(`No runs in ${store.root}.\n`);
    return 0;
  }
  const harmed = new Map(damaged.map((d) => [d.runId, d.error]));
  const rows = await Promise.all(
    runs.map(async (r) => {
      const total = Math.ceil(r.itemCount / r.config.batchSize) * r.config.epochs;
      const last = harmed.has(r.id) ? null : await store.lastStep(r.id);
      const steps = last === null ? `damaged/${total}` : `${last?.step ?? 0}/${total}`;
      return [r.id, r.status, r.config.task ?? 'dataset', runMethod(r), steps, r.updatedAt.slice(0, 19).replace('T', ' ')];
    }),
  );
  // Runs whose own record does not read: only their id is known for sure.
  for (const { runId } of damaged) if (!runs.some((r) => r.id === runId)) rows.push([runId, 'damaged', '-', '-', 'damaged', '-']);
  io.stdout(table(['run', 'status', 'task', 'mode', 'steps', 'updated'], rows));
  for (const { error } of damaged) io.stderr(`${error.message}\n`);
  return 0;
}

function nodeIo(): TrainIo {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  return {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    interactive: process.stderr.isTTY === true,
    interrupt: controller.signal,
    async loadModel(model, device, progress, options) {
      const onnx = await import('../onnx.js');
      const path = await modelPath(model ?? 'webgrpo-tiny');
      return onnx.loadOnnxPolicy({
        model: path,
        hiddenState: options?.trainable === true,
        device: device as 'auto' | 'cpu' | 'wasm' | 'webgpu',
        onProgress: (p) => progress(p.status === 'ready' ? 'Model ready.' : `Loading model… ${p.total ? Math.round((p.loaded / p.total) * 100) : 0}%`),
      });
    },
  };
}

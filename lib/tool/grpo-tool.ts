/**
 * `createGrpoTool`: the Training-Free GRPO loop behind the duplex frame protocol of the
 * @polyweave/grpo tool, so a harness that speaks frames can train without knowing the loop's API.
 * It takes that tool's options as a drop-in (`{ apiKey, model, baseURL?, dataset, groupSize,
 * epochs, initialExperiences }`: without a `policy`, an OpenAI-compatible one is built from them),
 * so code written for it runs with only its import changed.
 *
 * In (sink): TOOL_CALL (start a run; `dataset`, `groupSize`, `epochs` override the options), TICK,
 * CANCEL, ABORT, DESCRIBE. Out (source): TOOL_RESULT (`{ experiences, epochs, itemsProcessed }`, or
 * `{ experiences, failed: true }`), ERROR (`Already running`, bad arguments, a failed run),
 * DESCRIPTION. The library carries over from one TOOL_CALL to the next.
 */
import { InvalidInputError } from '../errors.js';
import { normalizeExperienceLibrary } from '../experience/normalize.js';
import type { ExemplarEntry, ExperienceEntry, ExperienceLibrary } from '../experience/types.js';
import { openAiPolicy } from '../policy/openai.js';
import type { Policy } from '../core/policy.js';
import { MemoryStore } from '../store/memory/store.js';
import type { LoopMode } from '../methods/training-free/record.js';
import type { DatasetItem } from '../core/dataset.js';
import type { Store } from '../store/store.js';
import { builtinRewards } from '../tasks/rewards.js';
import { trainingFreeGrpo } from '../methods/training-free/method.js';
import type { TrainingFreeGrpoOptions } from '../methods/training-free/options.js';
import type { TrainingFreeEvent } from '../methods/training-free/events.js';
import type { RewardFunction } from '../core/reward.js';

export interface Frame {
  type: string;
  content?: unknown;
}

export interface FrameWriter {
  write(frame: Frame): void;
}

/** Output frames; written to every piped writer, buffered until the first pipe. */
export interface FrameSource {
  pipe<W extends FrameWriter>(writer: W): W;
}

export type ToolLoopOptions = Omit<
  TrainingFreeGrpoOptions,
  'policy' | 'critic' | 'dataset' | 'rewards' | 'groupSize' | 'epochs' | 'initialExperiences' | 'mode' | 'store' | 'signal' | 'runId'
>;

/** The @polyweave/grpo tool's default model, for both the agent and the evaluator. */
export const GRPO_TOOL_DEFAULT_MODEL = 'deepseek-v4-flash';
/** Where that model is served (DeepSeek's OpenAI-compatible API), when no `baseURL` is given. */
export const GRPO_TOOL_DEFAULT_BASE_URL = 'https://api.deepseek.com/v1';

export interface GrpoToolOptions {
  /** The model to train with. Default: `openAiPolicy({ baseURL, apiKey, model })` from the options below. */
  policy?: Policy;
  /** Without a `policy`: the API key of the OpenAI-compatible endpoint (kept in memory only). */
  apiKey?: string;
  /** Without a `policy`: the model to call, for rollouts and critic alike. Default `deepseek-v4-flash`. */
  model?: string;
  /** Without a `policy`: the endpoint. Default `https://api.deepseek.com/v1` (where the default model is served). */
  baseURL?: string;
  /** Default: the policy. */
  critic?: Policy;
  /** Items: `{ prompt | messages, answer? }`, plain strings, or the @polyweave/grpo tool's `{ task, expected }`. */
  dataset?: unknown[];
  /** Default: `exact` and `similarity` against each item's answer. */
  rewards?: RewardFunction[];
  /** Completions per item. Default 4 (as the @polyweave/grpo tool). */
  groupSize?: number;
  /** Passes over the dataset. Default 1 (as the @polyweave/grpo tool). */
  epochs?: number;
  /** Starting library, normalised with `normalizeExperienceLibrary` (the @polyweave/grpo tool's `{ item, output, score }` too). */
  initialExperiences?: unknown;
  /** Default `lessons`; `exemplars` keeps best outputs instead (no critic). */
  mode?: LoopMode;
  /** Where runs are kept. Default: a `MemoryStore`, closed by `close()`. */
  store?: Store;
  /**
   * `free` (default): a run goes on by itself. `tick`: after each step the run waits for a TICK
   * frame, so a harness that ticks sets the pace.
   */
  pace?: 'free' | 'tick';
  /** Any other loop option (temperature, batchSize, templates...). */
  loop?: ToolLoopOptions;
}

export type ExperienceRecord = ExperienceEntry | ExemplarEntry;

export interface GrpoTool {
  source: FrameSource;
  sink: FrameWriter;
  _toolName: 'grpo';
  /** The current library: lessons, then exemplars (copies). */
  getExperiences(): ExperienceRecord[];
  /** Stops any run and closes the store the tool created. */
  close(): Promise<void>;
}

const SCHEMA = {
  type: 'object',
  properties: {
    dataset: { type: 'array', description: 'Items to train on: { prompt | messages, answer? }, strings, or { task, expected }.' },
    groupSize: { type: 'integer', minimum: 2, description: 'Completions sampled per item.' },
    epochs: { type: 'integer', minimum: 1, description: 'Passes over the dataset.' },
  },
};

/** The @polyweave/grpo tool allows strings and `{ task, expected }` items; ours are `{ prompt | messages, answer? }`. */
export function toDatasetItem(value: unknown, at: string): DatasetItem {
  if (typeof value === 'string') return { prompt: value };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidInputError(at, 'expected a string or an object.');
  const record = value as Record<string, unknown>;
  if ('prompt' in record || 'messages' in record) return record as DatasetItem;
  const prompt = record.task ?? record.question ?? record.input;
  if (typeof prompt !== 'string') throw new InvalidInputError(at, 'expected "prompt", "messages", or a "task" text.');
  const answer = record.expected ?? record.answer;
  return answer === undefined ? { prompt } : { prompt, answer: answer as DatasetItem['answer'] };
}

/**
 * The Training-Free GRPO loop behind the @polyweave/grpo tool's frame protocol: write frames
 * (TOOL_CALL, TICK, CANCEL, ...) to `sink`, pipe `source` to read the results; the options are
 * that tool's, so code written for it only changes its import.
 */
export function createGrpoTool(options: GrpoToolOptions): GrpoTool {
  if (!options || typeof options !== 'object') throw new InvalidInputError('options', 'expected an options object.');
  const tool = new Tool(options);
  return {
    source: { pipe: (writer) => tool.pipe(writer) },
    sink: { write: (frame) => tool.write(frame) },
    _toolName: 'grpo',
    getExperiences: () => experiences(tool.library),
    close: () => tool.close(),
  };
}

interface ToolArgs {
  dataset: DatasetItem[];
  groupSize: number;
  epochs: number;
}

/** The run in progress: aborting it, cancelling it after its step, and waking it on a TICK. */
interface Current {
  controller: AbortController;
  cancel: () => void;
  tick: () => void;
}

/** The tool's state between frames: its policy and store, the frames' readers, the library so far, and the run in progress. */
class Tool {
  readonly policy: Policy;
  readonly store: Store;
  private readonly ownsStore: boolean;
  private readonly writers: FrameWriter[] = [];
  /** Frames emitted before any reader was piped. */
  private readonly buffered: Frame[] = [];
  library: ExperienceLibrary;
  private current: Current | undefined;
  private closed = false;

  constructor(private readonly options: GrpoToolOptions) {
    this.policy =
      options.policy ??
      openAiPolicy({ baseURL: options.baseURL ?? GRPO_TOOL_DEFAULT_BASE_URL, model: options.model ?? GRPO_TOOL_DEFAULT_MODEL, ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}) });
    this.store = options.store ?? new MemoryStore();
    this.ownsStore = options.store === undefined;
    this.library = normalizeExperienceLibrary(options.initialExperiences);
  }

  pipe<W extends FrameWriter>(writer: W): W {
    this.writers.push(writer);
    for (const frame of this.buffered.splice(0)) writer.write(frame);
    return writer;
  }

  write(frame: Frame): void {
    if (this.closed) return this.error('The grpo tool is closed.');
    if (typeof frame !== 'object' || frame === null || typeof frame.type !== 'string') return this.error('A frame is an object with a string "type".');
    switch (frame.type) {
      case 'TOOL_CALL': {
        if (this.current) return this.error('Already running');
        try {
          this.start(this.parseArgs(frame.content));
        } catch (failure) {
          this.error((failure as Error).message);
        }
        return;
      }
      case 'TICK':
        this.current?.tick();
        return;
      case 'CANCEL':
        // Finish the step in progress (it is committed), then stop; a later TOOL_CALL may start at once.
        this.current?.cancel();
        this.current = undefined;
        return;
      case 'ABORT':
        this.current?.controller.abort();
        this.current?.cancel();
        this.current = undefined;
        return;
      case 'DESCRIBE':
        this.emit({ type: 'DESCRIPTION', content: description() });
        return;
      default:
        return this.error(`Unknown frame type "${frame.type}"; expected TOOL_CALL, TICK, CANCEL, ABORT or DESCRIBE.`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.current?.controller.abort();
    this.current?.cancel();
    this.current = undefined;
    if (this.ownsStore) await this.store.close();
  }

  private emit(frame: Frame): void {
    if (this.writers.length === 0) this.buffered.push(frame);
    else for (const writer of this.writers) writer.write(frame);
  }

  private error(message: string): void {
    this.emit({ type: 'ERROR', content: { message } });
  }

  private parseArgs(content: unknown): ToolArgs {
    const { options } = this;
    const args = content === undefined || content === null ? {} : content;
    if (typeof args !== 'object' || Array.isArray(args)) throw new InvalidInputError('content', 'TOOL_CALL content must be an object.');
    const { dataset = options.dataset, groupSize = options.groupSize ?? 4, epochs = options.epochs ?? 1 } = args as Record<string, unknown>;
    if (!Array.isArray(dataset) || dataset.length === 0) throw new InvalidInputError('dataset', 'give a non-empty array of items (in the options or the TOOL_CALL).');
    if (typeof groupSize !== 'number' || !Number.isInteger(groupSize) || groupSize < 2) throw new InvalidInputError('groupSize', 'expected an integer >= 2.');
    if (typeof epochs !== 'number' || !Number.isInteger(epochs) || epochs < 1) throw new InvalidInputError('epochs', 'expected an integer >= 1.');
    return { dataset: dataset.map((item, i) => toDatasetItem(item, `dataset[${i}]`)), groupSize, epochs };
  }

  private start(args: ToolArgs): void {
    const { options } = this;
    const controller = new AbortController();
    // Built here so that bad arguments (a malformed item, a bad option) are an ERROR, not a failed run.
    const run = trainingFreeGrpo({
      ...options.loop,
      policy: this.policy,
      critic: options.critic,
      dataset: args.dataset,
      rewards: options.rewards ?? [builtinRewards.exact, builtinRewards.similarity],
      groupSize: args.groupSize,
      epochs: args.epochs,
      mode: options.mode,
      initialExperiences: this.library,
      store: this.store,
      signal: controller.signal,
    });
    let cancelled = false;
    let wake: (() => void) | undefined;
    const self: Current = {
      controller,
      cancel: () => {
        cancelled = true;
        wake?.();
      },
      tick: () => wake?.(),
    };
    this.current = self;
    const pace = async (): Promise<boolean> => {
      if (cancelled) return false;
      if (options.pace === 'tick') {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      return !cancelled;
    };
    void this.follow(run, self, pace);
  }

  /** Reads the run's events to its end, keeping the library after each step; reports its result while it is still the current run. */
  private async follow(run: AsyncIterable<TrainingFreeEvent>, self: Current, pace: () => Promise<boolean>): Promise<void> {
    const stillCurrent = () => this.current === self;
    try {
      let outcome: { epochs: number; items: number; status: string } | undefined;
      for await (const event of run) {
        if (event.type === 'step-end') {
          this.library = event.library;
          if (!(await pace())) break;
        }
        if (event.type === 'run-end') outcome = { epochs: event.epochsCompleted, items: event.itemsProcessed, status: event.status };
      }
      if (stillCurrent() && outcome?.status === 'completed') {
        this.emit({ type: 'TOOL_RESULT', content: { experiences: experiences(this.library), epochs: outcome.epochs, itemsProcessed: outcome.items } });
      }
    } catch (failure) {
      if (stillCurrent() && !self.controller.signal.aborted) {
        this.error(failure instanceof Error ? failure.message : String(failure));
        this.emit({ type: 'TOOL_RESULT', content: { experiences: experiences(this.library), failed: true } });
      }
    } finally {
      if (stillCurrent()) this.current = undefined;
    }
  }
}

function description() {
  return {
    name: 'grpo',
    description: 'Training-Free GRPO: improves a policy through an experience library instead of its weights.',
    capabilities: ['write', 'execute'],
    schema: SCHEMA,
  };
}

function experiences(library: ExperienceLibrary): ExperienceRecord[] {
  return structuredClone([...library.entries, ...library.exemplars]);
}

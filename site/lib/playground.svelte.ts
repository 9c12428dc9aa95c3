/**
 * The playground's state and actions. Components read this and call its methods; it calls the
 * library (stores, tasks, methods, policies) and keeps what the panels draw: the stored runs, the
 * selected run's data (live while it runs from this tab), the model, and the setup form.
 */
import {
  importRun,
  type Policy,
  type ItemResult,
  type RunBundle,
  type RunRecord,
  type Store,
} from '../../lib/index.js';
import { builtinRewards, builtinTasks } from '../../lib/tasks.js';
import { runMethod } from '../../lib/method.js';
import { adapterPoint, adapterTrace, runAdapterTrace, type AdapterPoint } from './adapter-view.js';
import { probeDevice, type DeviceReport } from './device.js';
import { RunEta } from './eta.js';
import { exportedRunId } from './export.js';
import { choiceOf, trainsModel, type MethodChoice, type PlaygroundEvent, type PlaygroundRun, type RunContext } from './methods.js';
import { chooseMethod, chooseModel, chooseTask, type MovedTask, type SetupChoice } from './setup-choice.js';
import { ModelSlot } from './model-slot.svelte.js';
import type { LoadDevice } from './models.js';
import { RunComparison } from './run-comparison.svelte.js';
import { Runner } from './runner.js';
import { INITIAL_SETUP, setupProblems, type Setup } from './setup.js';
import { stageAfter } from './live-stage.js';
import { withCommittedStep, withEvaluation, withPendingItem } from './live-bundle.js';
import { streamingPolicy, type GroupStream } from './streaming.js';
import { HumanRatings } from './human-reward.svelte.js';
import type { RatingMessage } from './worker-ratings.js';
import { HELD_OUT_ITEMS, heldOutEvaluation, heldOutItems, heldOutSize, trainingItems } from './held-out.js';
import { trainsAdapter } from './kind-view.js';
import { asConversational, HUMAN_REWARD, promptLabel, readDatasetFile, rewardsOf, type UploadedDataset } from './tasks.js';
import { TokenShading } from './token-shading.svelte.js';
import { ScoredTokenViews } from './scored-views.svelte.js';
import { RenderedPrompts } from './rendered-prompts.svelte.js';
import type { TokenView } from './token-views.js';
import { lastStepShown, runTitle } from './view.js';
import { onnxModelOf } from './models.js';
import { setupOfRun } from './run-setup.js';
import { ViewStore } from './view-store.js';

export interface LiveRun {
  runId: string;
  paused: boolean;
  /** What the loop is doing, in words. */
  stage: string;
  itemsDone: number;
  totalItems: number;
  step: number;
  totalSteps: number;
  epoch: number;
  epochs: number;
  etaMs: number | null;
  warnings: number;
}

export class Playground {
  store: Store | null = null;
  #views: ViewStore | null = null;
  ready = $state(false);
  fatal = $state<string | null>(null);
  device = $state<DeviceReport | null>(null);

  readonly model = new ModelSlot();
  /** The groups waiting for the person's ratings (runs with the "You" reward). */
  readonly ratings = new HumanRatings();

  // Setup
  setup = $state<Setup>({ ...INITIAL_SETUP });
  upload = $state.raw<UploadedDataset | null>(null);
  uploadError = $state<string | null>(null);

  // Runs
  runs = $state.raw<RunRecord[]>([]);
  /** Stored runs that cannot be read whole, and what is wrong: listed as damaged, never resumed, repaired or deleted here. */
  damaged = $state.raw<Array<{ runId: string; message: string }>>([]);
  selectedId = $state<string | null>(null);
  bundle = $state.raw<RunBundle | null>(null);
  /** The step in view; null follows the latest. */
  viewStep = $state<number | null>(null);
  live = $state<LiveRun | null>(null);
  runError = $state<string | null>(null);
  /** Something the user should know about the run just started or resumed (not an error). */
  notice = $state<string | null>(null);
  /** The group or critic reply being written, and the prompt it is for. */
  stream = $state.raw<(GroupStream & { item: number }) | null>(null);
  #streamItem = 0;
  /** The token-shaded text of the groups in view, and what its tokens are shaded by. */
  readonly pieces = new TokenShading(() => this.model.policy, () => this.#views);
  tokenView = $state<TokenView>('probability');
  readonly scored = new ScoredTokenViews(() => this.model.policy);
  /** The exact text each group's prompt was, as the run's model read it. */
  readonly prompts = new RenderedPrompts(() => this.model.policy);
  /** Gradient runs: the adapter after each step (recorded here as steps commit, and the stored checkpoint). */
  adapterPoints = $state.raw<AdapterPoint[]>([]);
  /** Runs ticked for comparison, and the comparison in view. */
  readonly compare = new RunComparison();
  #runner: Runner | null = null;
  /** A task a method moved away from, to move back to (setup-choice.ts). */
  #movedTask: MovedTask | null = null;
  #eta = new RunEta();

  /** The last step with something to show: committed, finished groups, or (live here) being written. */
  readonly lastStep = $derived(this.bundle ? Math.max(lastStepShown(this.bundle), this.live?.runId === this.bundle.run.id ? this.live.step : 0) : 0);
  readonly shownStep = $derived(this.viewStep ?? this.lastStep);

  async init(): Promise<void> {
    try {
      const { openIdbStore } = await import('../../lib/idb.js');
      [this.store, this.#views, this.device] = await Promise.all([openIdbStore(), ViewStore.open(), probeDevice()]);
      this.model.calibrations = this.#views;
      await this.refreshRuns();
      if (this.runs[0]) await this.select(this.runs[0].id);
    } catch (error) {
      this.fatal = `This browser could not open IndexedDB, where runs are kept: ${(error as Error).message}`;
    }
    this.ready = true;
  }

  // ---- setup ----

  /** Picks a method (setup-choice.ts: its settings, and a task it cannot learn moved). */
  chooseMethod(id: string): void {
    this.#apply(chooseMethod(this.setup, this.model.id, this.#movedTask, id));
  }

  /** Picks a task (setup-choice.ts: a method's settings for it, where it has its own). */
  chooseTask(name: string): void {
    Object.assign(this.setup, chooseTask(this.setup, this.model.id, name));
  }

  /** Picks a model (setup-choice.ts: the method's settings on it, where they differ). */
  chooseModel(id: string): void {
    const from = this.model.id;
    this.model.id = id;
    this.#apply(chooseModel(this.setup, from, id, this.#movedTask));
  }

  #apply(choice: SetupChoice): void {
    Object.assign(this.setup, choice.setup);
    this.#movedTask = choice.moved;
  }

  /** The settings of the chosen method that cannot be run as typed, by setting. */
  readonly problems = $derived(setupProblems(this.setup, choiceOf(this.setup.method).settings));

  /** Loads the chosen model, ready for the chosen method. */
  loadModel(): Promise<Policy> {
    return this.model.ensure(this.device, { trainable: trainsModel(choiceOf(this.setup.method)) });
  }

  /** Reads an uploaded dataset; a file that does not parse leaves the one loaded before in place. */
  async chooseFile(file: File): Promise<void> {
    this.uploadError = null;
    try {
      this.upload = await readDatasetFile(file);
      this.setup.task = 'upload';
    } catch (error) {
      const kept = this.upload ? ` ${this.upload.fileName} (${this.upload.items.length} items) is still the dataset.` : '';
      this.uploadError = `${(error as Error).message}${kept}`;
    }
  }

  /** Sends the uploaded plain prompts through the model's chat template, as user messages. */
  applyChatTemplate(): void {
    if (this.upload) this.upload = { ...this.upload, items: asConversational(this.upload.items), templated: true };
  }

  // ---- runs ----

  async refreshRuns(): Promise<void> {
    if (!this.store) return;
    const [runs, damaged] = await Promise.all([this.store.listRuns(), this.store.listDamaged()]);
    this.runs = runs;
    this.damaged = damaged.map(({ runId, error }) => ({ runId, message: error.message }));
  }

  /**
   * Shows a run. Unless a run is going, the setup form takes the run's method, task, model and
   * settings (`form: false` leaves it as typed), so Start runs what the page shows.
   */
  async select(runId: string | null, { form = true }: { form?: boolean } = {}): Promise<void> {
    this.selectedId = runId;
    this.compare.close();
    this.viewStep = null;
    this.runError = null;
    let bundle: RunBundle | null = null;
    try {
      bundle = runId && this.store ? await this.store.readBundle(runId) : null;
    } catch (error) {
      // A damaged run shows what is wrong instead of its data (and so offers no resume).
      this.runError = `Run ${runId} cannot be read: ${error instanceof Error ? error.message : String(error)}`;
    }
    this.adapterPoints = bundle && trainsAdapter(bundle.run) ? await this.#adapterPoints(bundle) : [];
    this.bundle = bundle;
    if (bundle && form && !this.live && !this.starting) this.#showSetupOf(bundle.run);
  }

  /** The form as `run` was started: its settings, and its model where the page offers it. */
  #showSetupOf(run: RunRecord): void {
    Object.assign(this.setup, setupOfRun(run, this.setup));
    this.#movedTask = null;
    const model = run.config.policy.backend === 'http' ? undefined : onnxModelOf(run.config.policy.model);
    if (model) this.model.id = model.id;
  }

  /** Reads the selected run again (its step in view stays). */
  async #reload(runId: string): Promise<void> {
    const bundle = await this.store?.readBundle(runId).catch(() => null);
    if (!bundle || this.selectedId !== runId) return;
    this.adapterPoints = trainsAdapter(bundle.run) ? await this.#adapterPoints(bundle) : [];
    this.bundle = bundle;
  }

  /** The adapter after each step this browser recorded, and after the stored checkpoint's step. */
  async #adapterPoints(bundle: RunBundle): Promise<AdapterPoint[]> {
    return runAdapterTrace(bundle, (await this.#views?.adapterTrace(bundle.run.id).catch(() => undefined)) ?? []);
  }

  get running(): boolean {
    return this.live !== null;
  }

  /** From Start (or Resume run) until the run's loop is live: loading the model, opening the run. */
  starting = $state(false);
  /** The run being resumed, while `starting`. */
  resumingId = $state<string | null>(null);

  start(): Promise<void> {
    return this.#launch(async () => {
      const s = { ...this.setup };
      const problem = Object.values(this.problems)[0];
      if (problem) throw new Error(problem);
      // The run in view goes while the new one loads (a model can take seconds), so its panels do
      // not stand in for the new run's; if the start fails, it comes back, the form as typed.
      const previous = this.selectedId;
      await this.select(null);
      try {
        await this.#startRun(s);
      } catch (error) {
        if (!this.live && this.selectedId === null && previous) await this.select(previous, { form: false });
        throw error;
      }
    });
  }

  /** Loads the model for `s`'s method and drives a new run of `s`. */
  async #startRun(s: Setup): Promise<void> {
    const method = choiceOf(s.method);
    const task = s.task === 'upload' ? null : builtinTasks[s.task];
    const dataset = task ? trainingItems(task, s.items, s.seed) : (this.upload?.items ?? []).slice(0, s.items);
    const runner = new Runner();
    const rewards = s.rateMyself ? [this.ratings.reward(runner.controller.signal)] : task ? task.rewards : [builtinRewards[s.reward]];
    const context = await this.#context(runner, method, rewards, task?.name);
    // A person rating every completion is the reward: held-out prompts would ask them for more.
    const heldOut = s.rateMyself ? [] : task ? heldOutItems(task, s.seed, dataset, heldOutSize(task)) : (this.upload?.items ?? []).slice(s.items, s.items + HELD_OUT_ITEMS);
    const evaluation = heldOutEvaluation(heldOut, s.temperature);
    const run = method.start({ ...context, dataset, setup: s, ...(evaluation ? { evaluation } : {}) });
    if (s.rateMyself) this.#relayRatings(method, run.runId, context);
    await this.#drive(run, runner);
  }

  /** Continues an interrupted or cancelled run with the model it was started with. */
  resumeRun(runId: string): Promise<void> {
    return this.#launch(async () => {
      this.resumingId = runId;
      const record = await this.store!.getRun(runId);
      if (!record) throw new Error('That run is no longer stored.');
      const { device, notice } = this.model.chooseFor(record, this.device);
      this.notice = notice;
      const method = choiceOf(runMethod(record));
      const runner = new Runner();
      const rewards = rewardsOf(record.config, { [HUMAN_REWARD]: this.ratings.reward(runner.controller.signal) });
      const context = await this.#context(runner, method, rewards, record.config.task, device);
      const run = method.resume(runId, context);
      if (record.config.rewards.some((r) => r.name === HUMAN_REWARD)) this.#relayRatings(method, runId, context);
      await this.#drive(run, runner);
    });
  }

  /**
   * Starts or resumes one run at a time. A model that did not load says so in the model panel,
   * so the run's error line does not repeat it.
   */
  async #launch(work: () => Promise<void>): Promise<void> {
    if (!this.store || this.live || this.starting) return;
    this.runError = null;
    this.notice = null;
    this.starting = true;
    try {
      await work();
    } catch (error) {
      if (this.model.status !== 'error') this.runError = error instanceof Error ? error.message : String(error);
    } finally {
      this.starting = false;
      this.resumingId = null;
    }
  }

  /** A run that loops in the model's worker waits there for the person's ratings: each goes there too. */
  #relayRatings(method: MethodChoice, runId: string, context: RunContext): void {
    const worker = context.trainer;
    if (!trainsModel(method) || !worker) return;
    this.ratings.relay = (group, row, reward) => worker.postMessage({ webgrpo: 'rating', runId, step: group.step, item: group.item, row, reward } satisfies RatingMessage);
  }

  /** The model (loaded for the method), the store, and where the group being written is shown. */
  async #context(runner: Runner, method: MethodChoice, rewards: RunContext['rewards'], task: string | undefined, device?: LoadDevice): Promise<RunContext> {
    const onStream = (stream: GroupStream | null) => (this.stream = stream ? { ...stream, item: this.#streamItem } : null);
    const loaded = await this.model.ensure(this.device, { trainable: trainsModel(method), ...(device ? { device } : {}) });
    const policy = streamingPolicy(loaded, onStream, { hasCritic: method.needsCritic });
    return { policy, trainer: this.model.trainer, store: this.store!, signal: runner.controller.signal, rewards, ...(task ? { task } : {}), onStream };
  }

  async #drive(run: PlaygroundRun, runner: Runner): Promise<void> {
    this.#runner = runner;
    this.#eta = new RunEta();
    this.live = { runId: run.runId, paused: false, stage: 'Starting…', itemsDone: 0, totalItems: 0, step: 0, totalSteps: 0, epoch: 0, epochs: 0, etaMs: null, warnings: 0 };
    this.starting = false;
    this.resumingId = null;
    try {
      await runner.drive<PlaygroundEvent>(run, { onEvent: (event) => this.#onEvent(event) });
    } catch (error) {
      this.runError = `The run stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      this.#runner = null;
      this.stream = null;
      this.ratings.clear();
      // The stored record says how the run ended; until it is read, the tab still shows it live
      // (a stored "running" run with no loop here would read as interrupted).
      await this.refreshRuns().catch(() => undefined);
      if (this.selectedId === run.runId) await this.#reload(run.runId);
      this.live = null;
    }
  }

  pause(): void {
    this.#runner?.pause();
    this.#eta.pause(performance.now());
    if (this.live) this.live.paused = true;
  }

  resume(): void {
    if (!this.live) return;
    this.#eta.resume(performance.now());
    this.live.paused = false;
    this.#runner?.resume();
  }

  cancel(): void {
    if (this.live) this.live.stage = 'Cancelling after the current group…';
    this.#runner?.cancel();
  }

  async #onEvent(event: PlaygroundEvent): Promise<void> {
    const live = this.live;
    if (!live || !this.store) return;
    const now = performance.now();
    if ('progress' in event) {
      const p = event.progress;
      Object.assign(live, { itemsDone: p.itemsDone, totalItems: p.totalItems, step: p.step, totalSteps: p.totalSteps, epoch: p.epoch, epochs: p.epochs });
    }
    live.stage = stageAfter(event, this.bundle?.run) ?? live.stage;
    this.#eta.observe(event, now);
    switch (event.type) {
      case 'run-start':
        await this.refreshRuns();
        await this.select(event.runId);
        this.#eta.evaluatedBefore((this.bundle?.run.evaluations ?? []).map((e) => e.epoch));
        break;
      case 'item-start':
        this.#streamItem = event.item;
        break;
      case 'rollouts':
        if (this.bundle?.run.id === live.runId && this.bundle.run.config.rewards.some((r) => r.name === HUMAN_REWARD)) {
          this.ratings.show(event.step, event.item, promptLabel(this.bundle.items[event.item] ?? {}), event.completions);
        }
        await this.pieces.record(live.runId, event.step, event.item, event.completions);
        break;
      case 'item-end':
        if (this.bundle?.run.id === live.runId && !event.reused) this.bundle = withPendingItem(this.bundle, event.result);
        break;
      case 'step-end': {
        const gradient = 'training' in event;
        const [record, checkpoint] = await Promise.all([this.store.getStep(live.runId, event.step), gradient ? this.store.getAdapter(live.runId) : undefined]);
        const point = checkpoint ? adapterPoint(checkpoint) : null;
        if (point) await this.#views?.putAdapterPoint(live.runId, point).catch(() => undefined);
        const b = this.bundle;
        if (record && b?.run.id === live.runId) {
          if (point) this.adapterPoints = adapterTrace(this.adapterPoints, point);
          this.bundle = withCommittedStep(b, record, checkpoint);
        }
        break;
      }
      case 'eval': {
        if (this.bundle?.run.id === live.runId) this.bundle = withEvaluation(this.bundle, event.evaluation);
        break;
      }
      case 'warning':
        live.warnings += 1;
        break;
    }
    const evaluation = this.bundle?.run.id === live.runId ? this.bundle.run.config.evaluation : undefined;
    live.etaMs = this.#eta.remainingMs(evaluation?.every, performance.now());
  }

  /** The scored token views of a stored group of the selected run (see ScoredTokenViews.ensure). */
  ensureScored(runId: string, result: ItemResult): Promise<void> {
    return this.bundle?.run.id === runId ? this.scored.ensure(this.bundle.run, result) : Promise.resolve();
  }

  /** The pieces of a stored group of the selected run (see TokenShading.ensure). */
  ensurePieces(runId: string, result: ItemResult): Promise<void> {
    return this.pieces.ensure(runId, result, this.bundle?.run.config.policy.model);
  }

  async deleteRun(runId: string): Promise<void> {
    if (!this.store || this.live?.runId === runId) return;
    this.compare.forget(runId);
    await this.store.deleteRun(runId);
    await this.#views?.deleteRun(runId);
    await this.refreshRuns();
    if (this.selectedId === runId) await this.select(this.runs[0]?.id ?? null);
  }

  async importFile(file: File): Promise<void> {
    if (!this.store) return;
    this.runError = null;
    try {
      const text = await file.text();
      const id = exportedRunId(text);
      const existing = id ? await this.store.getRun(id) : undefined;
      if (existing) throw new Error(`this run (${runTitle(existing)}) is already in your list. Delete it there first to import the file again.`);
      const record = await importRun(this.store, text);
      await this.refreshRuns();
      await this.select(record.id);
    } catch (error) {
      this.runError = `Could not import ${file.name}: ${(error as Error).message}`;
    }
  }
}

export const app = new Playground();

/**
 * The playground's state and actions. Components read this and call its methods; it calls the
 * library (stores, tasks, methods, policies) and keeps what the panels draw: the stored runs, the
 * selected run's data (live while it runs from this tab), the model, and the setup form.
 */
import {
  builtinRewards,
  builtinTasks,
  importRun,
  runMethod,
  type Policy,
  type ItemResult,
  type RunBundle,
  type RunRecord,
  type Store,
} from '../../lib/index.js';
import { adapterPoint, adapterTrace, type AdapterPoint } from './adapter-view.js';
import { probeDevice, type DeviceReport } from './device.js';
import { EtaClock } from './eta.js';
import { adapterJson, download, fileStem, libraryJson, runJson, runJsonl } from './export.js';
import { methodOf, type PlaygroundEvent, type PlaygroundRun, type RunContext } from './methods.js';
import { ModelSlot } from './model-slot.svelte.js';
import { bundledModelPath, ENDPOINT_ID, ONNX_MODELS } from './models.js';
import { Runner } from './runner.js';
import { INITIAL_SETUP, type Setup } from './setup.js';
import { stageAfter } from './live-stage.js';
import { streamingPolicy, type GroupStream } from './streaming.js';
import { readDatasetFile, rewardsOf, type UploadedDataset } from './tasks.js';
import { TokenShading } from './token-shading.svelte.js';
import { lastStepShown, libraryAfter } from './view.js';
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

  // Setup
  setup = $state<Setup>({ ...INITIAL_SETUP });
  upload = $state.raw<UploadedDataset | null>(null);
  uploadError = $state<string | null>(null);

  // Runs
  runs = $state.raw<RunRecord[]>([]);
  selectedId = $state<string | null>(null);
  bundle = $state.raw<RunBundle | null>(null);
  /** The step in view; null follows the latest. */
  viewStep = $state<number | null>(null);
  live = $state<LiveRun | null>(null);
  runError = $state<string | null>(null);
  /** The group or critic reply being written, and the prompt it is for. */
  stream = $state.raw<(GroupStream & { item: number }) | null>(null);
  #streamItem = 0;
  /** The token-shaded text of the groups in view. */
  readonly pieces = new TokenShading(() => this.model.policy, () => this.#views);
  /** Gradient runs: the adapter after each step (recorded here as steps commit, and the stored checkpoint). */
  adapterPoints = $state.raw<AdapterPoint[]>([]);
  #runner: Runner | null = null;
  #eta = new EtaClock();

  /** The last step with something to show: committed, finished groups, or (live here) being written. */
  readonly lastStep = $derived(this.bundle ? Math.max(lastStepShown(this.bundle), this.live?.runId === this.bundle.run.id ? this.live.step : 0) : 0);
  readonly shownStep = $derived(this.viewStep ?? this.lastStep);

  async init(): Promise<void> {
    try {
      const { openIdbStore } = await import('../../lib/idb.js');
      [this.store, this.#views, this.device] = await Promise.all([openIdbStore(), ViewStore.open(), probeDevice()]);
      await this.refreshRuns();
      if (this.runs[0]) await this.select(this.runs[0].id);
    } catch (error) {
      this.fatal = `This browser could not open IndexedDB, where runs are kept: ${(error as Error).message}`;
    }
    this.ready = true;
  }

  // ---- setup ----

  /** Picks a method and the settings it suggests (a built-in task it cannot learn moves to one it can). */
  chooseMethod(id: string): void {
    const method = methodOf(id);
    Object.assign(this.setup, method.defaults, { method: method.id });
    if (method.tasks && this.setup.task !== 'upload' && !method.tasks.includes(this.setup.task)) this.setup.task = method.tasks[0];
  }

  /** Loads the chosen model, ready for the chosen method. */
  loadModel(): Promise<Policy> {
    return this.model.ensure(this.device, { trainable: methodOf(this.setup.method).trainsAdapter });
  }

  async chooseFile(file: File): Promise<void> {
    this.uploadError = null;
    try {
      this.upload = await readDatasetFile(file);
      this.setup.task = 'upload';
    } catch (error) {
      this.upload = null;
      this.uploadError = (error as Error).message;
    }
  }

  // ---- runs ----

  async refreshRuns(): Promise<void> {
    if (this.store) this.runs = await this.store.listRuns();
  }

  async select(runId: string | null): Promise<void> {
    this.selectedId = runId;
    this.viewStep = null;
    this.runError = null;
    const bundle = runId && this.store ? await this.store.readBundle(runId) : null;
    this.adapterPoints = bundle?.run.kind === 'gradient' ? await this.#adapterPoints(bundle) : [];
    this.bundle = bundle;
  }

  /** Reads the selected run again (its step in view stays). */
  async #reload(runId: string): Promise<void> {
    const bundle = await this.store?.readBundle(runId).catch(() => null);
    if (!bundle || this.selectedId !== runId) return;
    this.adapterPoints = bundle.run.kind === 'gradient' ? await this.#adapterPoints(bundle) : [];
    this.bundle = bundle;
  }

  /** The adapter after each step this browser recorded, and after the stored checkpoint's step. */
  async #adapterPoints(bundle: RunBundle): Promise<AdapterPoint[]> {
    const recorded = (await this.#views?.adapterTrace(bundle.run.id).catch(() => undefined)) ?? [];
    let latest: AdapterPoint | null = null;
    try {
      latest = bundle.adapter ? adapterPoint(bundle.adapter) : null;
    } catch {
      // An imported run's damaged checkpoint: the recorded points still draw.
    }
    return adapterTrace(recorded, latest);
  }

  get running(): boolean {
    return this.live !== null;
  }

  async start(): Promise<void> {
    if (!this.store || this.live) return;
    this.runError = null;
    try {
      const s = { ...this.setup };
      const method = methodOf(s.method);
      const task = s.task === 'upload' ? null : builtinTasks[s.task];
      const dataset = task ? task.dataset({ size: s.items, seed: s.seed }) : (this.upload?.items ?? []).slice(0, s.items);
      const rewards = task ? task.rewards : [builtinRewards[s.reward]];
      const runner = new Runner();
      const context = await this.#context(runner, method.trainsAdapter, rewards, task?.name);
      await this.#drive(method.start({ ...context, dataset, setup: s }), runner);
    } catch (error) {
      this.runError = error instanceof Error ? error.message : String(error);
    }
  }

  /** Continues an interrupted or cancelled run with the model it was started with. */
  async resumeRun(runId: string): Promise<void> {
    if (!this.store || this.live) return;
    this.runError = null;
    try {
      const record = await this.store.getRun(runId);
      if (!record) throw new Error('That run is no longer stored.');
      this.#chooseModelOf(record);
      const method = methodOf(runMethod(record));
      const runner = new Runner();
      const context = await this.#context(runner, method.trainsAdapter, rewardsOf(record.config), record.config.task);
      await this.#drive(method.resume(runId, context), runner);
    } catch (error) {
      this.runError = error instanceof Error ? error.message : String(error);
    }
  }

  /** The model (loaded for the method), the store, and where the group being written is shown. */
  async #context(runner: Runner, trainable: boolean, rewards: RunContext['rewards'], task: string | undefined): Promise<RunContext> {
    const onStream = (stream: GroupStream | null) => (this.stream = stream ? { ...stream, item: this.#streamItem } : null);
    const policy = streamingPolicy(await this.model.ensure(this.device, { trainable }), onStream);
    return { policy, trainer: this.model.trainer, store: this.store!, signal: runner.controller.signal, rewards, ...(task ? { task } : {}), onStream };
  }

  /** Points the model picker at the model a stored run used. */
  #chooseModelOf(record: RunRecord): void {
    const used = record.config.policy;
    if (used.backend === 'http') {
      if (this.model.id !== ENDPOINT_ID || this.model.endpoint.model !== used.model) {
        throw new Error(`This run used the endpoint model "${used.model}": choose "OpenAI-compatible endpoint", enter its URL and key, then resume.`);
      }
      return;
    }
    const path = (p: string) => p.replace(/\/+$/, '');
    const model = ONNX_MODELS.find((m) => (m.source === 'bundled' ? path(bundledModelPath()) === path(used.model) : m.hubId === used.model));
    if (!model) throw new Error(`This run used the model "${used.model}", which the playground does not offer.`);
    this.model.id = model.id;
  }

  async #drive(run: PlaygroundRun, runner: Runner): Promise<void> {
    this.#runner = runner;
    this.#eta = new EtaClock();
    this.live = { runId: run.runId, paused: false, stage: 'Starting…', itemsDone: 0, totalItems: 0, step: 0, totalSteps: 0, epoch: 0, epochs: 0, etaMs: null, warnings: 0 };
    try {
      await runner.drive<PlaygroundEvent>(run, { onEvent: (event) => this.#onEvent(event) });
    } catch (error) {
      this.runError = `The run stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      this.#runner = null;
      this.live = null;
      this.stream = null;
      await this.refreshRuns();
      if (this.selectedId === run.runId) await this.#reload(run.runId);
    }
  }

  pause(): void {
    this.#runner?.pause();
    this.#eta.pause(performance.now());
    if (this.live) this.live.paused = true;
  }

  resume(): void {
    if (!this.live) return;
    this.#eta.start(this.live.itemsDone, performance.now());
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
      this.#eta.update(p.itemsDone);
      live.etaMs = this.#eta.remainingMs(p.totalItems, now);
    }
    live.stage = stageAfter(event, this.bundle?.run) ?? live.stage;
    switch (event.type) {
      case 'run-start':
        this.#eta.start(event.progress.itemsDone, now);
        await this.refreshRuns();
        await this.select(event.runId);
        break;
      case 'item-start':
        this.#streamItem = event.item;
        break;
      case 'rollouts':
        await this.pieces.record(live.runId, event.step, event.item, event.completions);
        break;
      case 'item-end':
        if (this.bundle?.run.id === live.runId && !event.reused) this.bundle = { ...this.bundle, pending: [...this.bundle.pending, event.result] };
        break;
      case 'step-end': {
        const gradient = 'training' in event;
        const [record, checkpoint] = await Promise.all([this.store.getStep(live.runId, event.step), gradient ? this.store.getAdapter(live.runId) : undefined]);
        const point = checkpoint ? adapterPoint(checkpoint) : null;
        if (point) await this.#views?.putAdapterPoint(live.runId, point).catch(() => undefined);
        const b = this.bundle;
        if (record && b?.run.id === live.runId) {
          if (point) this.adapterPoints = adapterTrace(this.adapterPoints, point);
          this.bundle = {
            ...b,
            steps: [...b.steps.filter((s) => s.step !== record.step), record],
            pending: b.pending.filter((r) => r.step !== record.step),
            ...(checkpoint ? { adapter: checkpoint } : {}),
          };
        }
        break;
      }
      case 'warning':
        live.warnings += 1;
        break;
    }
  }

  /** The pieces of a stored group of the selected run (see TokenShading.ensure). */
  ensurePieces(runId: string, result: ItemResult): Promise<void> {
    return this.pieces.ensure(runId, result, this.bundle?.run.config.policy.model);
  }

  async deleteRun(runId: string): Promise<void> {
    if (!this.store || this.live?.runId === runId) return;
    await this.store.deleteRun(runId);
    await this.#views?.deleteRun(runId);
    await this.refreshRuns();
    if (this.selectedId === runId) await this.select(this.runs[0]?.id ?? null);
  }

  async importFile(file: File): Promise<void> {
    if (!this.store) return;
    this.runError = null;
    try {
      const record = await importRun(this.store, await file.text());
      await this.refreshRuns();
      await this.select(record.id);
    } catch (error) {
      this.runError = `Could not import ${file.name}: ${(error as Error).message}`;
    }
  }

  // ---- export ----

  exportJsonl(): void {
    if (this.bundle) download(runJsonl(this.bundle), `${fileStem(this.bundle)}.jsonl`, 'application/jsonl');
  }

  /** The adapter of a gradient run's last committed step, as an adapter file. */
  exportAdapter(): void {
    const checkpoint = this.bundle?.adapter;
    if (this.bundle && checkpoint) download(adapterJson(checkpoint), `${fileStem(this.bundle)}-adapter-step${checkpoint.step}.json`, 'application/json');
  }

  exportLibrary(): void {
    if (!this.bundle) return;
    const step = this.shownStep;
    download(libraryJson(libraryAfter(this.bundle, step), this.bundle.run.id, step), `${fileStem(this.bundle)}-library-step${step}.json`, 'application/json');
  }

  async exportRun(): Promise<void> {
    if (this.bundle && this.store) download(await runJson(this.store, this.bundle.run.id), `${fileStem(this.bundle)}-run.json`, 'application/json');
  }
}

export const app = new Playground();

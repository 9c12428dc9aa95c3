/**
 * The playground's actions and the run in view. Its state is kept in a store per concern: the
 * model (model-slot), the setup form (setup-form), the stored runs (run-list), the run looping here
 * (live-run); this holds the selected run's data and starts, resumes, imports and deletes runs,
 * calling the library (stores, tasks, methods, policies).
 */
import {
  importRun,
  type Policy,
  type RunBundle,
  type Store,
} from '../../lib/index.js';
import { builtinRewards, builtinTasks } from '../../lib/tasks.js';
import { runMethod } from '../../lib/method.js';
import { adapterPoint, adapterTrace, runAdapterTrace, type AdapterPoint } from './adapter-view.js';
import { probeDevice, type DeviceReport } from './device.js';
import { exportedRunId } from './export.js';
import { choiceOf, trainsModel, type MethodChoice, type PlaygroundEvent, type PlaygroundRun, type RunContext } from './methods.js';
import { ModelSlot } from './model-slot.svelte.js';
import type { LoadDevice } from './models.js';
import { RunComparison } from './run-comparison.svelte.js';
import { Runner } from './runner.js';
import type { Setup } from './setup.js';
import { withCommittedStep, withEvaluation, withPendingItem } from './live-bundle.js';
import { streamingPolicy } from './streaming.js';
import { HumanRatings } from './human-reward.svelte.js';
import type { RatingMessage } from './worker-ratings.js';
import { HELD_OUT_ITEMS, heldOutEvaluation, heldOutItems, heldOutSize, trainingItems } from './held-out.js';
import { trainsAdapter } from './kind-view.js';
import { HUMAN_REWARD, promptLabel, rewardsOf } from './tasks.js';
import { GroupViews } from './group-views.svelte.js';
import { lastStepShown, runTitle } from './view.js';
import { ViewStore } from './view-store.js';
import { SetupForm } from './setup-form.svelte.js';
import { RunList } from './run-list.svelte.js';
import { LiveRunView } from './live-run.svelte.js';

export class Playground {
  store: Store | null = null;
  #views: ViewStore | null = null;
  ready = $state(false);
  fatal = $state<string | null>(null);
  device = $state<DeviceReport | null>(null);

  readonly model = new ModelSlot();
  /** The groups waiting for the person's ratings (runs with the "You" reward). */
  readonly ratings = new HumanRatings();

  readonly form = new SetupForm(this.model);
  readonly list = new RunList();
  /** The run looping in this tab. */
  readonly live = new LiveRunView();

  // The run in view
  selectedId = $state<string | null>(null);
  bundle = $state.raw<RunBundle | null>(null);
  /** The step in view; null follows the latest. */
  viewStep = $state<number | null>(null);
  runError = $state<string | null>(null);
  /** Something the user should know about the run just started or resumed (not an error). */
  notice = $state<string | null>(null);
  /** How the groups in view are drawn (token shading, scored views, the prompts as read). */
  readonly groups = new GroupViews(() => this.model.policy, () => this.#views);
  /** Gradient runs: the adapter after each step (recorded here as steps commit, and the stored checkpoint). */
  adapterPoints = $state.raw<AdapterPoint[]>([]);
  /** Runs ticked for comparison, and the comparison in view. */
  readonly compare = new RunComparison();

  /** The last step with something to show: committed, finished groups, or (live here) being written. */
  readonly lastStep = $derived(this.bundle ? Math.max(lastStepShown(this.bundle), this.live.run?.runId === this.bundle.run.id ? this.live.run.step : 0) : 0);

  async init(): Promise<void> {
    try {
      const { openIdbStore } = await import('../../lib/idb.js');
      [this.store, this.#views, this.device] = await Promise.all([openIdbStore(), ViewStore.open(), probeDevice()]);
      this.model.calibrations = this.#views;
      await this.refreshRuns();
      if (this.list.runs[0]) await this.select(this.list.runs[0].id);
    } catch (error) {
      this.fatal = `This browser could not open IndexedDB, where runs are kept: ${(error as Error).message}`;
    }
    this.ready = true;
  }

  /** Loads the chosen model, ready for the chosen method. */
  loadModel(): Promise<Policy> {
    return this.model.ensure(this.device, { trainable: trainsModel(this.form.method) });
  }

  // ---- runs ----

  async refreshRuns(): Promise<void> {
    if (this.store) await this.list.refresh(this.store);
  }

  /**
   * Seals, on the user's word, every record of this browser's runs stored without checksums (by a
   * webgrpo before them); records with checksums, edited or not, stay as they are, so an edited run
   * stays damaged.
   */
  async sealUnverified(): Promise<void> {
    const { sealUnverifiedIdb } = await import('../../lib/idb.js');
    await sealUnverifiedIdb();
    await this.refreshRuns();
    if (this.selectedId) await this.select(this.selectedId, { form: false });
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
    if (bundle && form && !this.live.run && !this.starting) this.form.showRun(bundle.run);
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
    return this.live.run !== null;
  }

  /** From Start (or Resume run) until the run's loop is live: loading the model, opening the run. */
  starting = $state(false);
  /** The run being resumed, while `starting`. */
  resumingId = $state<string | null>(null);

  start(): Promise<void> {
    return this.#launch(async () => {
      const s = { ...this.form.setup };
      const problem = Object.values(this.form.problems)[0];
      if (problem) throw new Error(problem);
      // The run in view goes while the new one loads (a model can take seconds), so its panels do
      // not stand in for the new run's; if the start fails, it comes back, the form as typed.
      const previous = this.selectedId;
      await this.select(null);
      try {
        await this.#startRun(s);
      } catch (error) {
        if (!this.live.run && this.selectedId === null && previous) await this.select(previous, { form: false });
        throw error;
      }
    });
  }

  /** Loads the model for `s`'s method and drives a new run of `s`. */
  async #startRun(s: Setup): Promise<void> {
    const method = choiceOf(s.method);
    const task = s.task === 'upload' ? null : builtinTasks[s.task];
    const dataset = task ? trainingItems(task, s.items, s.seed) : (this.form.upload?.items ?? []).slice(0, s.items);
    const runner = new Runner();
    const rewards = s.rateMyself ? [this.ratings.reward(runner.controller.signal)] : task ? task.rewards : [builtinRewards[s.reward]];
    const context = await this.#context(runner, method, rewards, task?.name);
    // A person rating every completion is the reward: held-out prompts would ask them for more.
    const heldOut = s.rateMyself ? [] : task ? heldOutItems(task, s.seed, dataset, heldOutSize(task)) : (this.form.upload?.items ?? []).slice(s.items, s.items + HELD_OUT_ITEMS);
    const evaluation = heldOutEvaluation(heldOut, s.temperature);
    const run = method.start({ ...context, dataset, setup: s, modelId: this.model.id, ...(evaluation ? { evaluation } : {}) });
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
    if (!this.store || this.live.run || this.starting) return;
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
    const onStream = this.live.onStream;
    const loaded = await this.model.ensure(this.device, { trainable: trainsModel(method), ...(device ? { device } : {}) });
    const policy = streamingPolicy(loaded, onStream, { hasCritic: method.needsCritic });
    return { policy, trainer: this.model.trainer, store: this.store!, signal: runner.controller.signal, rewards, ...(task ? { task } : {}), onStream };
  }

  async #drive(run: PlaygroundRun, runner: Runner): Promise<void> {
    this.live.begin(run.runId, runner);
    this.starting = false;
    this.resumingId = null;
    try {
      await runner.drive<PlaygroundEvent>(run, { onEvent: (event) => this.#onEvent(event) });
    } catch (error) {
      this.runError = `The run stopped: ${error instanceof Error ? error.message : String(error)}`;
    } finally {
      this.live.stopped();
      this.ratings.clear();
      // The stored record says how the run ended; until it is read, the tab still shows it live
      // (a stored "running" run with no loop here would read as interrupted).
      await this.refreshRuns().catch(() => undefined);
      if (this.selectedId === run.runId) await this.#reload(run.runId);
      this.live.end();
    }
  }

  async #onEvent(event: PlaygroundEvent): Promise<void> {
    const live = this.live.run;
    if (!live || !this.store) return;
    this.live.observe(event, this.bundle?.run, performance.now());
    switch (event.type) {
      case 'run-start':
        await this.refreshRuns();
        await this.select(event.runId);
        this.live.evaluatedBefore((this.bundle?.run.evaluations ?? []).map((e) => e.epoch));
        break;
      case 'rollouts':
        if (this.bundle?.run.id === live.runId && this.bundle.run.config.rewards.some((r) => r.name === HUMAN_REWARD)) {
          this.ratings.show(event.step, event.item, promptLabel(this.bundle.items[event.item] ?? {}), event.completions);
        }
        await this.groups.pieces.record(live.runId, event.step, event.item, event.completions);
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
    }
    const evaluation = this.bundle?.run.id === live.runId ? this.bundle.run.config.evaluation : undefined;
    this.live.updateEta(evaluation?.every, performance.now());
  }

  async deleteRun(runId: string): Promise<void> {
    if (!this.store || this.live.run?.runId === runId) return;
    this.compare.forget(runId);
    await this.store.deleteRun(runId);
    await this.#views?.deleteRun(runId);
    await this.refreshRuns();
    if (this.selectedId === runId) await this.select(this.list.runs[0]?.id ?? null);
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

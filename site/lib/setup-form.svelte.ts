/**
 * The setup form's state: the settings as typed, the uploaded dataset, and the choices of method,
 * task and model (setup-choice.ts says what each changes; this applies it, in the handler of the
 * choice, so nothing is changed after the fact by an effect).
 */
import type { RunRecord } from '../../lib/index.js';
import { choiceOf, type MethodChoice } from './methods.js';
import type { ModelSlot } from './model-slot.svelte.js';
import { onnxModelOf } from './models.js';
import { setupOfRun } from './run-setup.js';
import { chooseMethod, chooseModel, chooseTask, type MovedTask, type SetupChoice } from './setup-choice.js';
import { INITIAL_SETUP, setupProblems, type Setup } from './setup.js';
import { asConversational, readDatasetFile, type UploadedDataset } from './tasks.js';

export class SetupForm {
  setup = $state<Setup>({ ...INITIAL_SETUP });
  upload = $state.raw<UploadedDataset | null>(null);
  uploadError = $state<string | null>(null);
  /** A task a method moved away from, to move back to (setup-choice.ts). */
  #moved: MovedTask | null = null;
  readonly #model: ModelSlot;

  constructor(model: ModelSlot) {
    this.#model = model;
  }

  /** The chosen method's entry. */
  readonly method: MethodChoice = $derived(choiceOf(this.setup.method));
  /** The settings of the chosen method that cannot be run as typed, by setting. */
  readonly problems = $derived(setupProblems(this.setup, this.method.settings));

  /** Picks a method (setup-choice.ts: its settings, and a task it cannot learn moved). */
  chooseMethod(id: string): void {
    this.#apply(chooseMethod(this.setup, this.#model.id, this.#moved, id));
  }

  /** Picks a task (setup-choice.ts: a method's settings for it, where it has its own). */
  chooseTask(name: string): void {
    Object.assign(this.setup, chooseTask(this.setup, this.#model.id, name));
  }

  /** Picks a model (setup-choice.ts: the method's settings on it, where they differ, and a method it can run). */
  chooseModel(id: string): void {
    const from = this.#model.id;
    this.#model.id = id;
    this.#apply(chooseModel(this.setup, from, id, this.#moved));
  }

  #apply(choice: SetupChoice): void {
    Object.assign(this.setup, choice.setup);
    this.#moved = choice.moved;
  }

  /** The form as `run` was started: its settings, and its model where the page offers it. */
  showRun(run: RunRecord): void {
    Object.assign(this.setup, setupOfRun(run, this.setup));
    this.#moved = null;
    const model = run.config.policy.backend === 'http' ? undefined : onnxModelOf(run.config.policy.model);
    if (model) this.#model.id = model.id;
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
}

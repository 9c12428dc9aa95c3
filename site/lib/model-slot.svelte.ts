/**
 * The model picker's state: which model and device are chosen, the endpoint settings (the key in
 * memory only), and the one loaded policy with its load progress and error. Loading the same
 * choice twice reuses the policy; a new choice disposes the old one (ending its worker). A model
 * loaded for gradient runs (trainable: with its hidden state) serves training-free runs too.
 */
import type { Policy, RunRecord } from '../../lib/index.js';
import type { OnnxDevice } from '../../lib/onnx.js';
import { calibratedLoad, calibrationNote, type CalibrationCache } from './calibrate.js';
import { hardwareWebGpu, type DeviceReport } from './device.js';
import {
  ENDPOINT_ID,
  hubModelCached,
  loadEndpoint,
  loadOnnxModel,
  ONNX_MODELS,
  onnxModelOf,
  type EndpointSettings,
  type LoadDevice,
  type LoadProgress,
  type OnnxModel,
  type WorkerModel,
} from './models.js';

export type ModelStatus = 'idle' | 'loading' | 'ready' | 'error';

export class ModelSlot {
  id = $state(ONNX_MODELS[0].id);
  device = $state<OnnxDevice>('auto');
  endpoint = $state<EndpointSettings>({ baseURL: 'http://127.0.0.1:8000/v1', model: '', apiKey: '' });
  status = $state<ModelStatus>('idle');
  progress = $state<LoadProgress | null>(null);
  error = $state<string | null>(null);
  policy = $state.raw<Policy | null>(null);
  /** The worker of the loaded ONNX model, when it was loaded trainable (gradient runs are started there). */
  trainer = $state.raw<Worker | null>(null);
  /** How Auto picked the device of the loaded model (its reason, or the speeds it measured). */
  deviceNote = $state<string | null>(null);
  /** Where Auto's measurements are kept between visits (the playground's view store). */
  calibrations: CalibrationCache | undefined;
  #loadedKey: string | null = null;
  #abort: AbortController | null = null;

  /** The ONNX model chosen, or undefined for the endpoint. */
  readonly onnx = $derived(ONNX_MODELS.find((m) => m.id === this.id));

  #key(device: OnnxDevice): string {
    return this.id === ENDPOINT_ID ? `${ENDPOINT_ID}:${this.endpoint.baseURL}:${this.endpoint.model}` : `${this.id}:${device}`;
  }

  /**
   * Loads the chosen model unless it is the one loaded. `report` tells whether WebGPU is there;
   * `trainable` asks for an ONNX model with a trainable head, run in its worker. `device` loads
   * it there for this once (a resumed run's own backend) and leaves the person's Device choice
   * as it is; a model already loaded on that backend serves as it is.
   */
  async ensure(report: DeviceReport | null, { trainable = false, device }: { trainable?: boolean; device?: LoadDevice } = {}): Promise<Policy> {
    const key = this.#key(device ?? this.device);
    const loadedThere = device !== undefined && this.#loadedKey?.startsWith(`${this.id}:`) === true && this.policy?.info.backend === device;
    if (this.policy && (this.#loadedKey === key || loadedThere) && (!trainable || this.trainer)) return this.policy;
    await this.unload();
    this.status = 'loading';
    this.error = null;
    this.progress = null;
    const abort = (this.#abort = new AbortController());
    try {
      let policy: Policy;
      const model = this.onnx;
      if (!model) {
        if (trainable) throw new Error('Gradient GRPO trains an adapter on a local ONNX model: choose the bundled model or a hub model.');
        policy = await loadEndpoint(this.endpoint);
      } else {
        if (model.source === 'hub' && !navigator.onLine && !(await hubModelCached(model))) {
          throw new Error(`${model.label} is downloaded on first use, and this browser is offline. The bundled webgrpo-tiny model works offline.`);
        }
        const loaded = await this.#loadOnnx(model, report, trainable, abort.signal, device);
        policy = loaded.policy;
        this.trainer = trainable ? loaded.worker : null;
      }
      this.policy = policy;
      this.#loadedKey = key;
      this.status = 'ready';
      return policy;
    } catch (error) {
      const cancelled = abort.signal.aborted;
      this.status = cancelled ? 'idle' : 'error';
      this.error = cancelled ? null : error instanceof Error ? error.message : String(error);
      throw error;
    } finally {
      this.#abort = null;
    }
  }

  /**
   * Loads an ONNX model on the chosen device. Auto never takes a software WebGPU adapter, and
   * between a hardware one and WebAssembly it keeps whichever measured faster on this model.
   */
  async #loadOnnx(model: OnnxModel, report: DeviceReport | null, trainable: boolean, signal: AbortSignal, runDevice?: LoadDevice): Promise<WorkerModel> {
    const load = (device: LoadDevice) => loadOnnxModel(model, { device, trainable, onProgress: (p) => (this.progress = p), signal });
    this.deviceNote = null;
    if (runDevice) {
      const name = runDevice === 'webgpu' ? 'WebGPU' : 'WebAssembly';
      this.deviceNote = `On ${name} for the resumed run. Device stays as you set it for new runs.`;
      return load(runDevice);
    }
    if (this.device !== 'auto') return load(this.device === 'webgpu' ? 'webgpu' : 'wasm');
    if (!report || !hardwareWebGpu(report)) {
      this.deviceNote = report?.software
        ? `Auto chose WebAssembly: the only WebGPU adapter here is software (${report.adapter}), tens of times slower. Choose WebGPU to use it anyway.`
        : 'Auto chose WebAssembly: this browser offers no WebGPU adapter.';
      return load('wasm');
    }
    try {
      const { loaded, calibration, cached } = await calibratedLoad({
        model: model.id,
        adapter: report.adapter ?? 'unnamed adapter',
        load,
        discard: (m) => m.policy.dispose().catch(() => undefined),
        signal,
        ...(this.calibrations ? { cache: this.calibrations } : {}),
      });
      this.deviceNote = calibrationNote(calibration, cached);
      return loaded;
    } catch (error) {
      if (signal.aborted) throw error;
      this.deviceNote = `Auto chose WebAssembly: WebGPU did not load (${error instanceof Error ? error.message : String(error)}).`;
      return load('wasm');
    }
  }

  /**
   * Points the picker at the model a stored run used, and says which device it resumes on: the
   * one it ran on, since another backend would give other numbers than the uninterrupted run.
   * The Device choice is the person's and stays as it is. Where the run's device is gone, the run
   * resumes on WebAssembly, and the notice says so.
   */
  chooseFor(record: RunRecord, report: DeviceReport | null): { device?: LoadDevice; notice: string | null } {
    const used = record.config.policy;
    if (used.backend === 'http') {
      if (this.id !== ENDPOINT_ID || this.endpoint.model !== used.model) {
        throw new Error(`This run used the endpoint model "${used.model}": choose "OpenAI-compatible endpoint", enter its URL and key, then resume.`);
      }
      return { notice: null };
    }
    const model = onnxModelOf(used.model);
    if (!model) throw new Error(`This run used the model "${used.model}", which the playground does not offer.`);
    this.id = model.id;
    if (used.backend === 'webgpu' && !report?.webgpu) {
      return { device: 'wasm', notice: 'This run was started on WebGPU, which this browser does not offer now: it resumes on WebAssembly, so its numbers can differ from an uninterrupted run.' };
    }
    return used.backend === 'webgpu' || used.backend === 'wasm' ? { device: used.backend, notice: null } : { notice: null };
  }

  cancel(): void {
    this.#abort?.abort();
  }

  async unload(): Promise<void> {
    const policy = this.policy;
    this.policy = null;
    this.trainer = null;
    this.deviceNote = null;
    this.#loadedKey = null;
    this.status = 'idle';
    await policy?.dispose().catch(() => undefined);
  }
}

/**
 * What the playground keeps next to the run store (in a database of its own) for its views:
 * - the token pieces of each stored group, so after a reload completions are shaded per token
 *   without a model (runs imported or trained elsewhere have none; their pieces are decoded when
 *   their model is loaded);
 * - the adapter's size after each step of a gradient run (the run store keeps only the latest
 *   checkpoint), so its growth can be drawn after a reload;
 * - Auto's device calibrations, per model and WebGPU adapter (calibrate.ts).
 */
import { openDB, type IDBPDatabase } from 'idb';
import type { AdapterPoint } from './adapter-view.js';
import type { Calibration, CalibrationCache } from './calibrate.js';
import type { TokenPiece } from './tokens.js';

const PIECES = 'pieces';
const ADAPTERS = 'adapters';
const CALIBRATIONS = 'calibrations';
const key = (runId: string, step: number, item = 0) => `${runId}\u0000${step}\u0000${item}`;
const runRange = (runId: string) => IDBKeyRange.bound(`${runId}\u0000`, `${runId}\u0001`, false, true);

export class ViewStore implements CalibrationCache {
  readonly #db: IDBPDatabase;
  private constructor(db: IDBPDatabase) {
    this.#db = db;
  }

  static async open(name = 'webgrpo-playground'): Promise<ViewStore> {
    const db = await openDB(name, 3, {
      upgrade(db, oldVersion) {
        if (oldVersion < 1) db.createObjectStore(PIECES);
        if (oldVersion < 2) db.createObjectStore(ADAPTERS);
        if (oldVersion < 3) db.createObjectStore(CALIBRATIONS);
      },
    });
    return new ViewStore(db);
  }

  /** Per completion of the group, its pieces. */
  getPieces(runId: string, step: number, item: number): Promise<TokenPiece[][] | undefined> {
    return this.#db.get(PIECES, key(runId, step, item));
  }

  async putPieces(runId: string, step: number, item: number, pieces: TokenPiece[][]): Promise<void> {
    await this.#db.put(PIECES, pieces, key(runId, step, item));
  }

  /** The adapter after each step recorded here, in step order (keys sort as strings, so sort here). */
  async adapterTrace(runId: string): Promise<AdapterPoint[]> {
    const points: AdapterPoint[] = await this.#db.getAll(ADAPTERS, runRange(runId));
    return points.sort((a, b) => a.step - b.step);
  }

  async putAdapterPoint(runId: string, point: AdapterPoint): Promise<void> {
    await this.#db.put(ADAPTERS, point, key(runId, point.step));
  }

  getCalibration(model: string, adapter: string): Promise<Calibration | undefined> {
    return this.#db.get(CALIBRATIONS, `${model}\u0000${adapter}`);
  }

  async putCalibration(calibration: Calibration): Promise<void> {
    await this.#db.put(CALIBRATIONS, calibration, `${calibration.model}\u0000${calibration.adapter}`);
  }

  async deleteRun(runId: string): Promise<void> {
    const tx = this.#db.transaction([PIECES, ADAPTERS], 'readwrite');
    await Promise.all([tx.objectStore(PIECES).delete(runRange(runId)), tx.objectStore(ADAPTERS).delete(runRange(runId)), tx.done]);
  }
}

/**
 * The token pieces of each stored group, kept next to the run store (in a database of the
 * playground's own) so that after a reload completions are shaded per token without a model.
 * Runs imported or trained elsewhere have none; their pieces are decoded when their model is loaded.
 */
import { openDB, type IDBPDatabase } from 'idb';
import type { TokenPiece } from './tokens.js';

const STORE = 'pieces';
const key = (runId: string, step: number, item: number) => `${runId}\u0000${step}\u0000${item}`;

export class PieceStore {
  readonly #db: IDBPDatabase;
  private constructor(db: IDBPDatabase) {
    this.#db = db;
  }

  static async open(name = 'webgrpo-playground'): Promise<PieceStore> {
    const db = await openDB(name, 1, {
      upgrade(db) {
        db.createObjectStore(STORE);
      },
    });
    return new PieceStore(db);
  }

  /** Per completion of the group, its pieces. */
  get(runId: string, step: number, item: number): Promise<TokenPiece[][] | undefined> {
    return this.#db.get(STORE, key(runId, step, item));
  }

  async put(runId: string, step: number, item: number, pieces: TokenPiece[][]): Promise<void> {
    await this.#db.put(STORE, pieces, key(runId, step, item));
  }

  async deleteRun(runId: string): Promise<void> {
    await this.#db.delete(STORE, IDBKeyRange.bound(`${runId}\u0000`, `${runId}\u0001`, false, true));
  }
}

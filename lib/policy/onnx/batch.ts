/**
 * Group sampling as one running batch. Each request's prompt is prefilled once for one row, its
 * cache gathered into one row per running completion and merged into the batch (right-aligned,
 * kv-cache.ts), and all rows of all requests decode together, one forward pass per step. Rows that
 * end leave the batch, requests that finish are answered at once, and requests that arrive while
 * it runs join between two steps (continuous batching), as long as the rows in flight stay within
 * `maxRows`. Each row draws from its own seeded stream (the r-th draw from its request's seed),
 * so a group is the same whatever else runs beside it.
 *
 * Every step runs through `lock`, the policy's queue, so a scoring call waits for one step, not
 * for a whole generation.
 */
import { mulberry32 } from '../../math/random.js';
import type { SamplingConfig } from '../sampling.js';
import type { GroupResult, TokenEvent } from '../../core/policy.js';
import { release, type Decoder, type ForwardResult } from './decoder.js';
import type { KvState } from './kv-cache.js';
import { RowDecoder, type StopRules } from './stopping.js';

export interface GroupRequest extends StopRules {
  promptIds: number[];
  groupSize: number;
  sampling: SamplingConfig;
  seed: number;
  signal?: AbortSignal;
  onToken?: (event: TokenEvent) => void;
}

export interface BatcherParts {
  decoder: Decoder;
  vocabSize: number;
  /** Prompt positions per prefill pass. */
  prefillWindow: number;
  /** Most rows decoding at once; a request waits until its group fits (a lone request always runs). */
  maxRows: number;
  /** false: the graph gets padded rows wrong, so a request joins only a batch of its own length (or an empty one). */
  padding: boolean;
  /** Runs one step after the policy's queued work, with runtime failures turned into typed errors. */
  lock<T>(task: () => Promise<T>): Promise<T>;
}

interface Job {
  request: GroupRequest;
  rows: RowDecoder[];
  resolve(result: GroupResult): void;
  reject(error: unknown): void;
  /** Set when the job's own constraint failed (its rows left the batch; the others go on). */
  failed?: boolean;
}

interface Active {
  job: Job;
  row: RowDecoder;
}

export class GroupBatcher {
  private readonly pending: Job[] = [];
  private active: Active[] = [];
  private kv: KvState | undefined;
  private running: Promise<void> | undefined;
  /** The job being prefilled, which a failing step must answer too. */
  private admitting: Job | undefined;

  constructor(private readonly parts: BatcherParts) {}

  /** Rows decoding now (for tests and the server's gauges). */
  get rowsInFlight(): number {
    return this.active.length;
  }

  submit(request: GroupRequest): Promise<GroupResult> {
    return new Promise<GroupResult>((resolve, reject) => {
      const seeds = mulberry32(request.seed);
      const rows = Array.from({ length: request.groupSize }, (_, i) => new RowDecoder(i, mulberry32(Math.floor(seeds() * 2 ** 32)), request));
      this.pending.push({ request, rows, resolve, reject });
      this.running ??= this.loop();
    });
  }

  /** Resolves once no request is pending or decoding. */
  drained(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private async loop(): Promise<void> {
    try {
      while (this.pending.length > 0 || this.active.length > 0) {
        try {
          await this.parts.lock(() => this.step());
        } catch (error) {
          this.fail(error);
        }
      }
    } finally {
      this.running = undefined;
    }
  }

  /** Admits what fits, then one decode step for every running row. */
  private async step(): Promise<void> {
    const { decoder, vocabSize, maxRows } = this.parts;
    this.leave(this.active.filter((a) => a.job.request.signal?.aborted).map((a) => a.row));
    const joining: KvState[] = [];
    try {
      while (this.pending.length > 0) {
        const job = this.pending[0];
        const inFlight = this.active.length + joining.reduce((n, kv) => n + kv.rows, 0);
        if (inFlight > 0 && inFlight + job.request.groupSize > maxRows) break;
        if (!this.parts.padding && inFlight > 0 && this.batchLength(joining) !== job.request.promptIds.length) break;
        this.pending.shift();
        this.admitting = job;
        const kv = await this.prefill(job);
        this.admitting = undefined;
        if (kv) joining.push(kv);
        else this.finish(job);
      }
      if (joining.length > 0) {
        const merged = this.kv ? decoder.kv.merge([this.kv, ...joining]) : joining.length > 1 ? decoder.kv.merge(joining) : joining[0];
        if (merged !== joining[0]) for (const kv of joining) decoder.kv.dispose(kv);
        joining.length = 0;
        if (this.kv) decoder.kv.dispose(this.kv);
        this.kv = merged;
      }
    } finally {
      for (const kv of joining) decoder.kv.dispose(kv);
    }
    if (this.active.length === 0 || !this.kv) return;

    const step = await decoder.forward(this.active.map((a) => a.row.lastToken), this.active.length, 1, this.kv);
    decoder.kv.dispose(this.kv);
    this.kv = step.kv;
    try {
      await this.draw(step, this.active, this.active.map((_, i) => i * vocabSize));
    } finally {
      release(step);
    }
    this.leave([]);
  }

  /** Cache length of the rows in flight (the batch, or the first joining group). */
  private batchLength(joining: KvState[]): number {
    return this.kv?.length ?? joining[0].length;
  }

  /**
   * Prefills a job's prompt, samples each row's first token, and returns the cache of the rows
   * still running (already in `active`); undefined when none is.
   */
  private async prefill(job: Job): Promise<KvState | undefined> {
    const { decoder, vocabSize, prefillWindow } = this.parts;
    const { promptIds, signal } = job.request;
    let kv: KvState = decoder.kv.empty(1);
    let last: ForwardResult | undefined;
    try {
      for (let start = 0; start < promptIds.length && !signal?.aborted; start += prefillWindow) {
        const chunk = promptIds.slice(start, start + prefillWindow);
        release(last);
        last = await decoder.forward(chunk, 1, chunk.length, kv, true);
        decoder.kv.dispose(kv);
        kv = last.kv;
      }
      if (!last || signal?.aborted) return undefined;
      const offset = (last.logits.dims[1] - 1) * vocabSize;
      const entries = job.rows.map((row) => ({ job, row }));
      await this.draw(last, entries, entries.map(() => offset));
      const running = job.rows.filter((row) => row.running);
      if (running.length === 0) return undefined;
      this.active.push(...running.map((row) => ({ job, row })));
      return decoder.kv.gather(kv, running.map(() => 0));
    } finally {
      release(last);
      decoder.kv.dispose(kv);
    }
  }

  private async draw(result: ForwardResult, entries: readonly Active[], offsets: number[]): Promise<void> {
    const { decoder } = this.parts;
    // Rows of one request share its sampling settings; a batch may hold several.
    let start = 0;
    while (start < entries.length) {
      const { request } = entries[start].job;
      let end = start + 1;
      while (end < entries.length && sameDraw(entries[end].job.request, request)) end++;
      // A row's constraint may fail (a format whose automaton outgrows its cap): that request
      // fails alone and its rows leave the batch; the other requests go on.
      const group = entries.slice(start, end).flatMap((entry, i) => {
        if (entry.job.failed) return [];
        try {
          const mask = entry.row.allowed();
          const u = entry.row.rng();
          return [{ entry, pick: mask ? { offset: offsets[start + i], u, mask } : { offset: offsets[start + i], u } }];
        } catch (error) {
          this.failJob(entry.job, error);
          return [];
        }
      });
      start = end;
      if (group.length === 0) continue;
      const picks = group.map((g) => g.pick);
      const tokens = await decoder.logits.sample(result.logits, picks, request.sampling, result.hidden);
      const k = request.topLogprobs ?? 0;
      const at = picks.map((p) => p.offset);
      const tops = k > 0 ? await decoder.logits.top(result.logits, at, k, request.sampling.temperature, result.hidden) : undefined;
      group.forEach(({ entry: { job, row } }, i) => {
        if (job.failed) return;
        try {
          row.push(tokens[i], tops?.[i]);
        } catch (error) {
          this.failJob(job, error);
          return;
        }
        job.request.onToken?.({ row: row.row, tokenId: tokens[i].tokenId, logprob: tokens[i].logprob, ...(tops ? { topLogprobs: tops[i] } : {}) });
      });
    }
  }

  /** Fails one job: its rows stop and leave the batch at the next `leave`; it is never answered. */
  private failJob(job: Job, error: unknown): void {
    job.failed = true;
    for (const row of job.rows) row.abort();
    job.reject(error);
  }

  /** Aborts `rows`, drops every row that ended from the batch, and answers the jobs that are done. */
  private leave(aborted: RowDecoder[]): void {
    for (const row of aborted) row.abort();
    const keep = this.active.flatMap((a, i) => (a.row.running ? [i] : []));
    if (keep.length === this.active.length) return;
    const { decoder } = this.parts;
    const ended = new Set(this.active.filter((a) => !a.row.running).map((a) => a.job));
    if (this.kv) {
      const gathered = keep.length > 0 ? decoder.kv.gather(this.kv, keep) : undefined;
      decoder.kv.dispose(this.kv);
      this.kv = gathered;
    }
    this.active = keep.map((i) => this.active[i]);
    for (const job of ended) if (job.rows.every((row) => !row.running)) this.finish(job);
  }

  private finish(job: Job): void {
    if (job.failed) return;
    for (const row of job.rows) row.abort(); // only rows still running when the signal fired
    const { promptIds } = job.request;
    const completions = job.rows.map((row) => row.completion());
    job.resolve({
      promptTokenIds: promptIds,
      completions,
      usage: { promptTokens: promptIds.length, completionTokens: completions.reduce((sum, c) => sum + c.tokenIds.length, 0) },
    });
  }

  /** A failed step fails every request in the batch; requests still waiting run after it. */
  private fail(error: unknown): void {
    const jobs = new Set(this.active.map((a) => a.job));
    if (this.admitting) jobs.add(this.admitting);
    this.admitting = undefined;
    if (this.kv) this.parts.decoder.kv.dispose(this.kv);
    this.kv = undefined;
    this.active = [];
    for (const job of jobs) job.reject(error);
  }
}

/** Whether two requests' rows can be sampled in one call: the same settings. */
function sameDraw(a: GroupRequest, b: GroupRequest): boolean {
  if (a === b) return true;
  const [x, y] = [a.sampling, b.sampling];
  return x.temperature === y.temperature && x.topK === y.topK && x.topP === y.topP && x.minP === y.minP && (a.topLogprobs ?? 0) === (b.topLogprobs ?? 0);
}

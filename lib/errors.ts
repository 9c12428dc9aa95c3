/**
 * Every error webgrpo throws is a `WebgrpoError` with a stable `code`, so callers can branch on
 * the kind of failure without parsing messages. Messages say what was wrong and what to do.
 * Each class states its `name` as a literal: a minifier renames classes, and `new.target.name`
 * would then report `InvalidInputError` as `t`.
 */
export type ErrorCode =
  | 'InvalidInput'
  | 'ModelLoad'
  | 'Generation'
  | 'StoreQuota'
  | 'Store'
  | 'StoreCorrupt'
  | 'Aborted'
  | 'Http'
  | 'Parse'
  | 'AlreadyRunning'
  | 'NotFound'
  | 'Unsupported'
  | 'Busy'
  | 'OutOfMemory';

/**
 * The base of every error webgrpo throws: branch on `code` (or `instanceof` a subclass) rather
 * than on the message; `cause` keeps the underlying error where there is one.
 */
export class WebgrpoError extends Error {
  override name = 'WebgrpoError';
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** A caller passed something malformed. `argument` names the offending option or field. */
export class InvalidInputError extends WebgrpoError {
  override name = 'InvalidInputError';
  readonly argument: string;

  constructor(argument: string, message: string, options?: { cause?: unknown }) {
    super('InvalidInput', `${argument}: ${message}`, options);
    this.argument = argument;
  }
}

/** Model files are missing, unreadable or not a supported architecture. */
export class ModelLoadError extends WebgrpoError {
  override name = 'ModelLoadError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('ModelLoad', message, options);
  }
}

/** The operation was cancelled through its AbortSignal. */
export class AbortError extends WebgrpoError {
  override name = 'AbortError';
  constructor(message = 'The operation was aborted.', options?: { cause?: unknown }) {
    super('Aborted', message, options);
  }
}

/** Throws an `AbortError` if `signal` has fired; call it between steps of long work. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
}

/** A store could not read or write (a failed transaction, a corrupt file, a closed database). */
export class StoreError extends WebgrpoError {
  override name = 'StoreError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('Store', message, options);
  }
}

/**
 * Stored data is damaged or incomplete: a file or record is missing, unreadable, of the wrong
 * shape, edited since it was written (its checksum differs) or out of step with the run's schedule,
 * or a run's steps have a gap. `what` names the file or record, `field` the field in it where one
 * is to blame (`config.epochs`, `adapter.a`); the message says what to do. Nothing was changed by
 * the operation that found it.
 */
export class StoreCorruptError extends WebgrpoError {
  override name = 'StoreCorruptError';
  readonly what: string;
  readonly field: string | undefined;

  constructor(what: string, message: string, options?: { cause?: unknown; field?: string }) {
    super('StoreCorrupt', message, options);
    this.what = what;
    this.field = options?.field;
  }
}

/**
 * The storage quota ran out (IndexedDB `QuotaExceededError`, `ENOSPC`/`EDQUOT` on disk). The write
 * that hit it was rolled back as a whole, so the stored run is intact: free space and resume it.
 */
export class StoreQuotaError extends WebgrpoError {
  override name = 'StoreQuotaError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('StoreQuota', message, options);
  }
}

/** A loop was started on a run that another loop (this page, another tab or process) is running. */
export class AlreadyRunningError extends WebgrpoError {
  override name = 'AlreadyRunningError';
  readonly runId: string;

  constructor(runId: string, message: string, options?: { cause?: unknown }) {
    super('AlreadyRunning', message, options);
    this.runId = runId;
  }
}

/** Nothing is stored under the id that was asked for (a run, a step, a group, a completion). */
export class NotFoundError extends WebgrpoError {
  override name = 'NotFoundError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('NotFound', message, options);
  }
}

/** Text that should have held structured data (critic output, a JSONL line) could not be parsed. */
export class ParseError extends WebgrpoError {
  override name = 'ParseError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('Parse', message, options);
  }
}

/** The backend cannot do what was asked (for example score completions over a hosted API). */
export class UnsupportedError extends WebgrpoError {
  override name = 'UnsupportedError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('Unsupported', message, options);
  }
}

/** An HTTP call failed. `status` is the response status, absent when no response came (network, timeout). */
export class HttpError extends WebgrpoError {
  override name = 'HttpError';
  readonly status: number | undefined;

  constructor(status: number | undefined, message: string, options?: { cause?: unknown }) {
    super('Http', message, options);
    this.status = status;
  }
}

/** A server's response body was larger than the client's cap (`limit` bytes); it was not read whole. */
export class ResponseTooLargeError extends HttpError {
  override name = 'ResponseTooLargeError';
  readonly limit: number;

  constructor(status: number | undefined, limit: number, message: string, options?: { cause?: unknown }) {
    super(status, message, options);
    this.limit = limit;
  }
}

/** Too much work is already waiting (a request queue is full); retry later. */
export class BusyError extends WebgrpoError {
  override name = 'BusyError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('Busy', message, options);
  }
}

/**
 * A step needed more memory than the runtime could give (onnxruntime's allocation failed, or an
 * array could not be allocated). Nothing was updated; committed steps are kept. The message says
 * what would fit: fewer completions, shorter replies, a 4-bit model, a smaller `memoryBudget`.
 */
export class OutOfMemoryError extends WebgrpoError {
  override name = 'OutOfMemoryError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('OutOfMemory', message, options);
  }
}

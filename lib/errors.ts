/**
 * Every error webgrpo throws is a `WebgrpoError` with a stable `code`, so callers can branch on
 * the kind of failure without parsing messages. Messages say what was wrong and what to do.
 */
export type ErrorCode =
  | 'InvalidInput'
  | 'ModelLoad'
  | 'Generation'
  | 'StoreQuota'
  | 'Store'
  | 'Aborted'
  | 'Http'
  | 'Parse'
  | 'AlreadyRunning'
  | 'NotFound'
  | 'Unsupported'
  | 'Busy';

export class WebgrpoError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** A caller passed something malformed. `argument` names the offending option or field. */
export class InvalidInputError extends WebgrpoError {
  readonly argument: string;

  constructor(argument: string, message: string, options?: { cause?: unknown }) {
    super('InvalidInput', `${argument}: ${message}`, options);
    this.argument = argument;
  }
}

/** Model files are missing, unreadable or not a supported architecture. */
export class ModelLoadError extends WebgrpoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ModelLoad', message, options);
  }
}

/** The operation was cancelled through its AbortSignal. */
export class AbortError extends WebgrpoError {
  constructor(message = 'The operation was aborted.', options?: { cause?: unknown }) {
    super('Aborted', message, options);
  }
}

/** Throws an `AbortError` if `signal` has fired; call it between steps of long work. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
}

/** Nothing is stored under the id that was asked for (a group, a completion). */
export class NotFoundError extends WebgrpoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NotFound', message, options);
  }
}

/** The backend cannot do what was asked (for example score completions over a hosted API). */
export class UnsupportedError extends WebgrpoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('Unsupported', message, options);
  }
}

/** An HTTP call failed. `status` is the response status, absent when no response came (network, timeout). */
export class HttpError extends WebgrpoError {
  readonly status: number | undefined;

  constructor(status: number | undefined, message: string, options?: { cause?: unknown }) {
    super('Http', message, options);
    this.status = status;
  }
}

/** Too much work is already waiting (a request queue is full); retry later. */
export class BusyError extends WebgrpoError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('Busy', message, options);
  }
}

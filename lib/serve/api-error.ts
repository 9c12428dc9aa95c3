/**
 * Errors as OpenAI sends them: a status and `{ "error": { message, type, param, code } }`, so
 * existing clients raise their usual exception classes (BadRequestError, AuthenticationError...).
 */
import { InvalidInputError, WebgrpoError } from '../errors.js';

export type ApiErrorType = 'invalid_request_error' | 'authentication_error' | 'not_found_error' | 'server_error';

/** An HTTP error the server answers as OpenAI does: its status and `{ error: { message, type, param, code } }`. */
export class ApiError extends Error {
  readonly status: number;
  readonly type: ApiErrorType;
  readonly param: string | null;
  readonly errorCode: string | null;

  constructor(status: number, message: string, details: { type?: ApiErrorType; param?: string | null; code?: string | null; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = status;
    this.type = details.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
    this.param = details.param ?? null;
    this.errorCode = details.code ?? null;
  }

  toJSON(): { error: { message: string; type: ApiErrorType; param: string | null; code: string | null } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.errorCode } };
  }
}

/** A 400 for one request field. */
export function badField(param: string, message: string, code = 'invalid_value'): ApiError {
  return new ApiError(400, `${param}: ${message}`, { param, code });
}

const INTERNAL = 'The server failed while handling the request; see its log.';

/**
 * Maps anything thrown while serving a request to the response a client should see. Server-side
 * failures (5xx) get neutral messages: theirs can name files on disk, and go to the server's log.
 */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof InvalidInputError) return new ApiError(400, error.message, { param: error.argument, code: 'invalid_value' });
  if (error instanceof WebgrpoError) {
    switch (error.code) {
      case 'NotFound':
        return new ApiError(404, error.message, { type: 'not_found_error', code: 'not_found' });
      case 'Unsupported':
        return new ApiError(400, error.message, { code: 'unsupported' });
      case 'Busy':
        return new ApiError(503, error.message, { code: 'overloaded' });
      case 'StoreQuota':
        return new ApiError(507, "The server's storage is full; nothing of this request was kept. Retry once its operator has freed space.", {
          code: 'insufficient_storage',
        });
      case 'StoreCorrupt':
        // Not a 500: the server works, the stored record this request names does not verify (and
        // stays as it is). 409: the request conflicts with the state of that record.
        return new ApiError(409, "The server's stored record for this request is damaged, so it is not used and nothing was changed; its operator has the details in the server's log.", {
          type: 'invalid_request_error',
          code: 'store_corrupt',
        });
      default:
        return new ApiError(500, INTERNAL, { code: 'internal_error' });
    }
  }
  return new ApiError(500, INTERNAL, { code: 'internal_error' });
}

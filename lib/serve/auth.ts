/** Bearer-token check in constant time (hashing first makes the lengths equal). */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from './api-error.js';

export function bearerCheck(apiKey: string): (req: IncomingMessage) => void {
  const expected = digest(apiKey);
  return (req) => {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match || !timingSafeEqual(digest(match[1]), expected)) {
      throw new ApiError(
        401,
        match ? 'Incorrect API key provided.' : 'Missing API key: send the header "Authorization: Bearer <key>".',
        { type: 'invalid_request_error', code: 'invalid_api_key' },
      );
    }
  };
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The worker transport in real headless Chromium with a real module Worker (page: test/browser/pages/worker-policy.html). */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupResult, ScoreResult, TokenEvent } from '../../lib/core/policy.js';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';

interface ErrorInfo {
  name: string;
  code?: string;
  argument?: string;
  message: string;
  isError: boolean;
}

let session: BrowserSession;
let page: Page;

beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/worker-policy.html');
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true);
});
afterAll(() => session?.close());

function call<T>(name: string): Promise<T> {
  return page.evaluate((fn) => (window as unknown as Record<string, () => Promise<unknown>>)[fn](), name) as Promise<T>;
}

describe('createWorkerPolicy + exposePolicy in Chromium', () => {
  it('gives the same groups, token events, scores and tokenizer as the policy on the page', async () => {
    const r = await call<{
      info: { model: string; backend: string; note: string };
      progress: unknown[];
      viaWorker: GroupResult;
      onPage: GroupResult;
      remoteTokens: TokenEvent[];
      localTokens: TokenEvent[];
      plainArrays: boolean;
      scoreViaWorker: ScoreResult;
      scoreOnPage: ScoreResult;
      encoded: number[];
      decoded: string;
      afterDispose: ErrorInfo;
    }>('compare');
    expect(r.info).toMatchObject({ model: 'toy', backend: 'toy', note: 'in a Web Worker (toy)' });
    expect(r.progress).toEqual([
      { status: 'loading', loaded: 1, total: 2 },
      { status: 'ready', loaded: 2, total: 2 },
    ]);
    expect(r.viaWorker).toEqual(r.onPage);
    expect(r.viaWorker.completions[0].topLogprobs?.[0]).toHaveLength(2);
    expect(r.plainArrays).toBe(true);
    expect(r.remoteTokens).toEqual(r.localTokens);
    expect(r.remoteTokens.length).toBeGreaterThan(3);
    expect(r.scoreViaWorker).toEqual(r.scoreOnPage);
    expect(r.encoded).toEqual([67, 68, 69]);
    expect(r.decoded).toBe('héllo 🙂');
    expect(r.afterDispose).toMatchObject({ code: 'Generation', message: expect.stringMatching(/disposed/) });
    expect(session.errors).toEqual([]);
  });

  it('re-throws the typed errors of the worker', async () => {
    const r = await call<{ viaWorker: ErrorInfo; onPage: ErrorInfo; load: ErrorInfo; missing: ErrorInfo }>('errors');
    expect(r.viaWorker).toEqual(r.onPage);
    expect(r.viaWorker).toMatchObject({ name: 'InvalidInputError', code: 'InvalidInput', argument: 'groupSize', isError: true });
    expect(r.load).toMatchObject({ name: 'ModelLoadError', code: 'ModelLoad', message: 'No model at /models/missing: check the path.' });
    expect(r.missing).toMatchObject({ code: 'Generation', message: expect.stringMatching(/worker failed/) });
  });

  it('forwards an abort into the worker, which stops within a step', async () => {
    const r = await call<{ finish: string[]; tokens: number[]; early: ErrorInfo }>('abort');
    expect(r.finish).toEqual(['abort', 'abort']);
    // 5000 tokens were asked for; the abort came after the 4th token event (2 rows per step).
    expect(Math.max(...r.tokens)).toBeLessThan(10);
    expect(r.early).toMatchObject({ name: 'AbortError', code: 'Aborted' });
  });
});

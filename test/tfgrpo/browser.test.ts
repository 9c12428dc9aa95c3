/**
 * The Training-Free GRPO loop on the real IndexedDB of headless Chromium (test/browser/pages/
 * tfgrpo.html), on recorded model outputs: a tab closed mid-step and a run resumed in a new tab end
 * with the same library as the uninterrupted run; a second tab cannot run a running run; a full
 * storage quota stops the run with StoreQuotaError and leaves it intact; a step without its
 * checksums is damage until sealed (sealUnverified). The reference run is
 * Node's: the library's text matches exactly, the steps' rewards and advantages to the cross-engine
 * tolerance of test/fixtures/near.ts (Chromium's JS engine is not Node's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { expectNear } from '../fixtures/near.js';
import { recordReference, standardShape, timeless, type Reference } from './helpers/fixture.js';
import { payloadOf } from '../../lib/method.js';

interface TfWindow {
  tf: {
    start(recording: unknown, runId: string, items: number, delayMs: number): Promise<number>;
    state(runId: string): Promise<{ status?: string; lastStep: number; pending: number[] }>;
    resume(recording: unknown, runId: string): Promise<{
      error?: { code: string; message: string };
      library: string;
      status: string;
      reused: number;
      steps: unknown[];
      pending: number;
      importedSame: boolean;
    }>;
    runAndHold(recording: unknown, runId: string, step: number): Promise<void>;
    failNextWrite(store: string): void;
    unsealedStep(recording: unknown, runId: string): Promise<{
      before: { damaged: Array<{ runId: string; code: string; what: string; field?: string; message: string }>; step: number | string };
      keptAsEdited: boolean;
      sealed: string[];
      after: { damaged: unknown[]; step: number | string };
    }>;
    release(): Promise<void>;
    proceed(runId: string): Promise<{ error?: { code: string; message: string }; lastStep: number; pending: number; status: string; libraryEntries: number }>;
  };
  ready?: boolean;
}

describe('Training-Free GRPO in headless Chromium (real IndexedDB)', () => {
  let session: BrowserSession;
  let reference: Reference;
  beforeAll(async () => {
    [session, reference] = await Promise.all([launchBrowser(), recordReference(standardShape())]);
  });
  afterAll(() => session?.close());

  /** Pages of one browser context share IndexedDB and Web Locks, as tabs of one profile do. */
  async function open(context: BrowserContext): Promise<Page> {
    const page = await session.open('/test/browser/pages/tfgrpo.html', context);
    await page.waitForFunction(() => (window as unknown as TfWindow).ready === true);
    return page;
  }

  it('a tab closed mid-step, resumed in a new tab, ends with the same library; a second tab is refused meanwhile', async () => {
    const recording = reference.recording;
    const context = await session.browser.newContext();
    const first = await open(context);
    // The first tab stops (holding its loop) after the first item of step 2.
    await first.evaluate(([rec]) => (window as unknown as TfWindow).tf.start(rec, 'closed-tab', 1, 40), [recording] as const);

    const second = await open(context);
    const refused = await second.evaluate(([rec]) => (window as unknown as TfWindow).tf.resume(rec, 'closed-tab'), [recording] as const);
    expect(refused.error?.code).toBe('AlreadyRunning');
    expect(refused.error?.message).toMatch(/already running in another tab/);

    // Let it go on, and close the tab once the next item's model call (40 ms) is in flight.
    await first.evaluate(() => (window as unknown as TfWindow).tf.release());
    await first.close();
    const state = await second.evaluate(() => (window as unknown as TfWindow).tf.state('closed-tab'));
    expect(state.status).toBe('running');
    expect(state.lastStep).toBe(1);
    expect(state.pending.length).toBeGreaterThanOrEqual(1);
    expect(state.pending.length).toBeLessThan(3);

    const resumed = await second.evaluate(([rec]) => (window as unknown as TfWindow).tf.resume(rec, 'closed-tab'), [recording] as const);
    expect(resumed.error).toBeUndefined();
    expect(resumed.status).toBe('completed');
    expect(resumed.reused).toBe(state.pending.length);
    expect(resumed.library).toBe(reference.libraryJson);
    expectNear(resumed.steps, reference.bundle.steps.map(timeless));
    expect(resumed.pending).toBe(0);
    expect(resumed.importedSame).toBe(true);
    await context.close();
    expect(session.errors).toEqual([]);
  });

  it('a step whose checksums were removed (and a reward edited) is damage, kept as it is, until sealUnverified takes it on its owner\'s word', async () => {
    const context = await session.browser.newContext();
    const page = await open(context);
    const seen = await page.evaluate(([rec]) => (window as unknown as TfWindow).tf.unsealedStep(rec, 'unsealed'), [reference.recording] as const);
    expect(seen.before.damaged).toHaveLength(1);
    expect(seen.before.damaged[0]).toMatchObject({ runId: 'unsealed', code: 'StoreCorrupt', what: 'the steps record ["unsealed",1] in IndexedDB database "webgrpo-browser-test"', field: 'integrity' });
    expect(seen.before.damaged[0].message).toMatch(/has no checksum .*sealUnverifiedIdb\(\{ name \}\) from webgrpo\/idb/);
    expect(seen.before.step).toBe('StoreCorrupt');
    expect(seen.keptAsEdited).toBe(true);
    expect(seen.sealed).toEqual(['steps ["unsealed",1]']);
    expect(seen.after).toEqual({ damaged: [], step: 0.987654 });
    await context.close();
    expect(session.errors).toEqual([]);
  });

  it('a full storage quota stops the run with StoreQuotaError and rolls the step back; it resumes once there is room', async () => {
    const context = await session.browser.newContext();
    const page = await open(context);
    await page.evaluate(([rec]) => (window as unknown as TfWindow).tf.runAndHold(rec, 'quota', 2), [reference.recording] as const);
    // Step 3's commit adds the step, deletes its pending items, then updates the run: that last
    // request fails, after the other two were made.
    await page.evaluate(() => (window as unknown as TfWindow).tf.failNextWrite('runs'));
    const stopped = await page.evaluate(() => (window as unknown as TfWindow).tf.proceed('quota'));
    expect(stopped.error?.code).toBe('StoreQuota');
    expect(stopped.error?.message).toMatch(/storage quota/);
    expect(stopped.lastStep).toBe(2);
    expect(stopped.pending).toBe(3);
    expect(stopped.libraryEntries).toBe(payloadOf(reference.bundle.steps[1], 'training-free')!.library.entries.length);

    const resumed = await page.evaluate(([rec]) => (window as unknown as TfWindow).tf.resume(rec, 'quota'), [reference.recording] as const);
    expect(resumed.error).toBeUndefined();
    expect(resumed.reused).toBe(3);
    expect(resumed.library).toBe(reference.libraryJson);
    expectNear(resumed.steps, reference.bundle.steps.map(timeless));
    await context.close();
    expect(session.errors).toEqual([]);
  });
});

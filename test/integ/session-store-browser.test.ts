/**
 * Session groups in the real IndexedDB of headless Chromium (test/browser/pages/session-store.html):
 * they survive a reopened database, a database of an older schema is migrated with its runs kept
 * (their steps in today's shape; like a group stored without checksums, unverifiable until sealed
 * with sealUnverified), and a full quota is a StoreQuotaError that leaves the stored group as it was.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GroupRecord } from '../../lib/index.js';
import { computeAdvantages } from '../../lib/math.js';
import { launchBrowser, type BrowserSession } from '../browser/chromium.js';
import { expectNear } from '../fixtures/near.js';

/** The legacy page's one item result (test/browser/pages/session-store.html): items keep their v4 shape. */
const MIGRATED_ITEM = {
  step: 1,
  epoch: 1,
  index: 0,
  position: 0,
  prompt: { prompt: 'q' },
  experienceIds: [],
  rollouts: [
    { text: 'a', tokenIds: [1], logprobs: [-0.5], finishReason: 'eos', rewards: [1], reward: 1, advantage: 0.7071067811865475 },
    { text: 'b', tokenIds: [2], logprobs: [-0.5], finishReason: 'eos', rewards: [0], reward: 0, advantage: -0.7071067811865475 },
  ],
  usage: { promptTokens: 1, completionTokens: 2 },
  stats: { scorable: 2, mean: 0.5, std: 0.7071067811865476, spread: 1 },
  warnings: [],
};

interface Told {
  groupId: string;
  group: GroupRecord;
  advantages: number[];
}
interface SessionsWindow {
  sessions: {
    askAndTell(name: string, rewards: number[]): Promise<Told>;
    reopen(name: string, groupId: string): Promise<{ group: GroupRecord; ids: string[] }>;
    migrate(name: string): Promise<{
      version: number;
      stores: string[];
      refused: { run?: { code: string; message: string }; group?: { code: string; message: string } };
      sealed: string[];
      run: { id: string } | undefined;
      step: Record<string, unknown> | undefined;
      groupText: string[];
      toldText: string[];
      groupId: string;
    }>;
    quota(name: string, groupId: string): Promise<{ error?: { code: string; message: string }; kept: GroupRecord }>;
  };
  ready?: boolean;
}

let session: BrowserSession;
let page: Page;
beforeAll(async () => {
  session = await launchBrowser();
  page = await session.open('/test/browser/pages/session-store.html');
  await page.waitForFunction(() => (window as unknown as SessionsWindow).ready === true);
});
afterAll(() => session?.close());

describe('session groups in headless Chromium (real IndexedDB)', () => {
  it('survive reopening the database, are migrated from schema v2, and a full quota loses nothing', async () => {
    const told = await page.evaluate(() => (window as unknown as SessionsWindow).sessions.askAndTell('sessions', [1, 0, 0.5]));
    // Computed by Chromium's engine against Node's: to the cross-engine tolerance, not bit for bit.
    expectNear(told.advantages, computeAdvantages([1, 0, 0.5], { groupSize: 3 }).advantages);
    const reopened = await page.evaluate(([id]) => (window as unknown as SessionsWindow).sessions.reopen('sessions', id), [told.groupId] as const);
    expect(reopened.group).toEqual(told.group);
    expect(reopened.group.feedback?.mean).toBe(0.5);
    expect(reopened.ids).toEqual([told.groupId]);

    const migrated = await page.evaluate(() => (window as unknown as SessionsWindow).sessions.migrate('legacy'));
    expect(migrated.version).toBe(5);
    expect(migrated.stores).toEqual(['adapters', 'groups', 'items', 'leases', 'pending', 'runs', 'steps']);
    expect(migrated.refused.run).toMatchObject({ code: 'StoreCorrupt', message: expect.stringMatching(/has no checksum .*sealUnverified/) });
    expect(migrated.refused.group).toMatchObject({ code: 'StoreCorrupt', message: expect.stringMatching(/has no checksum/) });
    expect(migrated.sealed).toEqual(['runs "old"', 'steps ["old",1]', 'groups "legacy-group"']);
    expect(migrated.groupText).toEqual(migrated.toldText);
    expect(migrated.run?.id).toBe('old');
    const library = { nextId: 0, entries: [], exemplars: [] };
    expect(migrated.step).toEqual({
      step: 1,
      epoch: 1,
      batch: 1,
      items: [MIGRATED_ITEM],
      stats: {},
      warnings: [],
      committedAt: '2025-01-01T00:00:00.000Z',
      payload: { kind: 'training-free', proposed: [], applied: [], skippedOperations: [], library },
    });

    const quota = await page.evaluate(([id]) => (window as unknown as SessionsWindow).sessions.quota('sessions', id), [told.groupId] as const);
    expect(quota.error?.code).toBe('StoreQuota');
    expect(quota.error?.message).toMatch(/storage quota/);
    expect(quota.kept).toEqual(told.group);
    expect(session.errors).toEqual([]);
  });
});

/**
 * The playground's follow-ups to the second walk, as a person meets them at a laptop's 1280x800 and
 * a phone's 375x812, on the production build in headless Chromium: dynamic sampling turned on in
 * Setup and what it did in each step's groups, the sentence before Start where a method was measured
 * not to help on the model chosen, and the greedy pass beside T=1 in the held-out panel. Each test
 * opens its own browser context (its own IndexedDB). Runs are webgrpo-tiny's: mechanics, not learning.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseTiny, startPlayground, type Playground } from './preview.js';

let playground: Playground;
const SHOTS = '/tmp/i28b-shots';

beforeAll(async () => {
  await mkdir(SHOTS, { recursive: true });
  playground = await startPlayground();
}, 180_000);

afterAll(() => playground?.close());

const WIDTHS = [
  { width: 1280, height: 800 },
  { width: 375, height: 812 },
] as const;

async function visit(viewport: { width: number; height: number }): Promise<{ page: Page; errors: string[]; close(): Promise<void> }> {
  const context = await playground.session.browser.newContext({ viewport });
  const errors: string[] = [];
  context.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  context.on('weberror', (error) => errors.push(String(error.error())));
  const page = await context.newPage();
  await page.goto(playground.baseURL);
  await page.getByRole('heading', { name: 'No run yet' }).waitFor();
  return { page, errors, close: () => context.close() };
}

const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
const chip = (page: Page) => page.locator('section[aria-labelledby="run-title"] h2 .chip');
const shot = (page: Page, name: string, viewport: { width: number }) => page.screenshot({ path: join(SHOTS, `${name}-${viewport.width}.png`) });

// No reply of three tokens equals this, so every group of the run below is flat under `exact`.
const UNREACHABLE = 'an answer far longer than three tokens of any model could spell out';

describe('the playground, third walk', { timeout: 300_000 }, () => {
  it.each(WIDTHS)('turns dynamic sampling on for a gradient run and shows per step what it resampled and dropped, and greedy beside T=1 (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    await chooseTiny(page);
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    const box = page.getByRole('checkbox', { name: 'Dynamic sampling (DAPO)' });
    expect(await box.isChecked()).toBe(false);
    expect(await box.getAttribute('aria-describedby')).toBe('dynamic-sampling-hint');
    expect(await page.locator('#dynamic-sampling-hint').textContent()).toContain('sampled again, up to 3 times, and left out of the update if it stays flat');
    await box.check();
    // Training-free methods have no such control.
    await page.getByRole('radio', { name: 'Training-free: exemplars' }).check();
    expect(await box.count()).toBe(0);
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    expect(await box.isChecked()).toBe(true);
    await box.scrollIntoViewIfNeeded();
    await shot(page, 'dynamic-sampling-setup', viewport);

    // Four items, two trained on and two held out, none of which the model can answer.
    const lines = ['a', 'b', 'c', 'd'].map((w) => JSON.stringify({ prompt: `Say ${w}`, answer: UNREACHABLE }));
    await field(page, 'Task').selectOption('upload');
    await field(page, 'JSONL file').setInputFiles({ name: 'flat.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(`${lines.join('\n')}\n`) });
    await field(page, 'Reward').selectOption('exact');
    for (const [label, value] of Object.entries({ Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3, Temperature: 1 })) await field(page, label).fill(String(value));
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => chip(page).textContent(), { timeout: 180_000, interval: 250 }).toBe('completed');

    // Both groups came back flat, were sampled three more times each, and stayed flat: dropped.
    const note = page.locator('#groups-resampled');
    expect(await note.textContent()).toBe(
      'Dynamic sampling (a flat group sampled again up to 3 times): 2 groups sampled again, 6 extra samplings in all: prompt #1 (×3), #2 (×3); 2 stayed flat and were left out of the update.',
    );
    expect(await page.locator('#groups-order').textContent()).toContain('2 of 2 groups have no signal');
    // Each card says it was sampled again, and how often.
    expect(await page.locator('article.group .chip.resampled').allTextContents()).toEqual(['sampled again ×3', 'sampled again ×3']);
    await note.scrollIntoViewIfNeeded();
    await shot(page, 'dynamic-sampling-step', viewport);

    // The held-out panel: T=1's exact match, and the greedy pass's beside it.
    const panel = page.locator('section[aria-labelledby="eval-title"]');
    const greedy = panel.locator('dd.greedy');
    expect(await greedy.textContent()).toMatch(/^\s*greedy \(T=0\): 0% → 0%,\s+\+0 points\s*$/);
    expect(await panel.locator('dt:text-is("Exact match") + dd').textContent()).toBe('0% → 0%');
    await panel.scrollIntoViewIfNeeded();
    await shot(page, 'held-out-greedy', viewport);
    expect(errors).toEqual([]);
    await close();
  });

  it.each(WIDTHS)('says before Start, with the measured numbers, where a method cannot help on the model chosen (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    const note = page.locator('#cannot-help');
    // The first run (LoRA on copy-format, webgrpo-skill) was measured to help: no such sentence.
    expect(await note.count()).toBe(0);
    await page.getByRole('radio', { name: 'Training-free: lessons' }).check();
    expect(await note.textContent()).toBe(
      'Lessons did not lift copy-format on webgrpo-skill (as its own critic it writes unreadable lessons): held-out greedy exact match fell from 96% to 16%, T=1 fell from 44% to 2% (BENCHMARKS “skill-free”).',
    );
    await note.scrollIntoViewIfNeeded();
    await shot(page, 'cannot-help-lessons', viewport);
    await page.getByRole('radio', { name: 'Training-free: exemplars' }).check();
    expect(await note.textContent()).toContain('held-out greedy exact match fell from 96% to 36%');
    await page.getByRole('radio', { name: 'LoRA (every layer)' }).check();
    await field(page, 'Task').selectOption('count-letter');
    expect(await note.textContent()).toContain('LoRA did not lift count-letter on webgrpo-skill');
    await field(page, 'Task').selectOption('copy-format');
    expect(await note.count()).toBe(0);
    // The router was never measured on copy-format: it gets no sentence borrowed from other tasks.
    await page.getByRole('radio', { name: 'Router (which prompt variant)' }).check();
    expect(await note.count()).toBe(0);
    await chooseTiny(page);
    await page.getByRole('radio', { name: 'Router (which prompt variant)' }).check();
    expect(await note.textContent()).toMatch(/^webgrpo-tiny has random weights, so every method on it shows the mechanics/);
    await note.scrollIntoViewIfNeeded();
    await shot(page, 'cannot-help-tiny', viewport);
    expect(errors).toEqual([]);
    await close();
  });
});

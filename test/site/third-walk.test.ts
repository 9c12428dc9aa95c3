/**
 * The playground's follow-ups to the second walk, as a person meets them at a laptop's 1280x800 and
 * a phone's 375x812, on the production build in headless Chromium: dynamic sampling turned on in
 * Setup and what it did in each step's groups, the sentence before Start where a method was measured
 * not to help on the model chosen, and the greedy pass beside T=1 in the held-out panel. Each test
 * opens its own browser context (its own IndexedDB). Runs are webgrpo-tiny's: mechanics, not learning.
 * Then the run in view (issue 43, items 4 to 7): after a reload the form takes the shown run's
 * method, model and settings; while a new run loads no panel of the previous run is in the right
 * column; an interrupted run's held-out panel does not say the base model is answering; a group
 * with no signal is one line; the run list names each run's method, model, settings and held-out
 * result, in the page's flow; beside the held-out gain, what one constant reply scores.
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
    // The first run's sort-words settings turn it on, and the choice carries over: this walk starts it off.
    expect(await box.isChecked()).toBe(true);
    await box.uncheck();
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
    // The first run (LoRA on sort-words, webgrpo-sorter) was measured to help: no such sentence; nor on webgrpo-skill, nor LoRA at copy-format there.
    expect(await note.count()).toBe(0);
    await field(page, 'Model').selectOption('skill');
    expect(await note.count()).toBe(0);
    await field(page, 'Task').selectOption('copy-format');
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

const header = (page: Page) => page.locator('section[aria-labelledby="run-title"]');

async function fill(page: Page, values: Record<string, number>): Promise<void> {
  for (const [label, value] of Object.entries(values)) await field(page, label).fill(String(value));
}

describe('the run in view', { timeout: 300_000 }, () => {
  it('shows the form of the run in view after a reload, and no earlier run while a new one loads', async () => {
    const context = await playground.session.browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(playground.baseURL);
    await page.getByRole('heading', { name: 'No run yet' }).waitFor();
    await chooseTiny(page, { exemplars: true });
    await fill(page, { Prompts: 2, 'Group size': 3, Epochs: 1, Batch: 2, 'Max tokens': 4, Seed: 7 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => chip(page).textContent(), { timeout: 120_000, interval: 250 }).toBe('completed');

    // The form moves on to another method and group size; a reload shows the stored run, so the form shows it too.
    await page.getByRole('radio', { name: 'Router (which prompt variant)' }).check();
    await fill(page, { 'Group size': 5 });
    await page.reload();
    await header(page).waitFor();
    expect(await page.getByRole('radio', { name: 'Training-free: exemplars' }).isChecked()).toBe(true);
    expect(await field(page, 'Model').inputValue()).toBe('tiny');
    expect(await field(page, 'Group size').inputValue()).toBe('3');
    expect(await field(page, 'Seed').inputValue()).toBe('7');
    expect(await field(page, 'Max tokens').inputValue()).toBe('4');

    // A gradient run loads the model again, trainable: meanwhile the column holds the new run, not the old one's panels.
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    await fill(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('heading', { name: 'Starting a new run' }).waitFor({ timeout: 60_000 });
    expect(await header(page).count()).toBe(0);
    expect(await page.locator('section[aria-labelledby="eval-title"]').count()).toBe(0);
    await expect.poll(() => chip(page).textContent(), { timeout: 120_000, interval: 250 }).toBe('completed');
    expect(await page.locator('#run-title').textContent()).toContain('gradient');
    await context.close();
  });

  it('says an interrupted run was not evaluated, not that the base model is answering', async () => {
    const context = await playground.session.browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(playground.baseURL);
    await page.getByRole('heading', { name: 'No run yet' }).waitFor();
    await chooseTiny(page, { exemplars: true });
    // Long replies keep the base model's held-out answers (2 samples and a greedy one per prompt) going for seconds.
    await fill(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 256 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await header(page).waitFor();
    const waiting = page.locator('#held-out-waiting');
    await waiting.waitFor();
    const prompts = /^The base model is answering (\d+) held-out prompts before the first step\.$/.exec((await waiting.textContent()) ?? '')?.[1];
    expect(Number(prompts)).toBeGreaterThan(0);
    // The tab closes mid-evaluation: the stored run is interrupted, with no evaluation.
    await page.reload();
    await expect.poll(() => chip(page).textContent(), { timeout: 30_000, interval: 250 }).toBe('interrupted');
    await waiting.waitFor();
    expect(await waiting.textContent()).toBe(`Not evaluated: the run stopped before the base model had answered its ${prompts} held-out prompts, and nothing is running. Resume the run to evaluate them first.`);
    await context.close();
  });

  it('shows each group with no signal as one line that opens, and the run list tells runs apart with their held-out result', async () => {
    const context = await playground.session.browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(playground.baseURL);
    await page.getByRole('heading', { name: 'No run yet' }).waitFor();
    await chooseTiny(page, { exemplars: true });
    // Four items, two trained on and two held out, none of which three tokens can answer: every group is flat.
    const unreachable = 'an answer far longer than three tokens of any model could spell out';
    const lines = ['a', 'b', 'c', 'd'].map((w) => JSON.stringify({ prompt: `Say ${w}`, answer: unreachable }));
    await field(page, 'Task').selectOption('upload');
    await field(page, 'JSONL file').setInputFiles({ name: 'flat.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(`${lines.join('\n')}\n`) });
    await field(page, 'Reward').selectOption('exact');
    await fill(page, { Prompts: 2, 'Group size': 3, Epochs: 1, Batch: 2, 'Max tokens': 3, Seed: 4 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => chip(page).textContent(), { timeout: 120_000, interval: 250 }).toBe('completed');

    const cards = page.locator('article.group');
    expect(await cards.count()).toBe(2);
    expect(await cards.locator('.completions').count()).toBe(0);
    const flatLines = await cards.locator('.flat-line > span').allTextContents();
    expect(flatLines).toHaveLength(2);
    for (const line of flatLines) expect(line).toMatch(/^No signal: (all 3 answers the same, “.*”|3 answers \([23] distinct\)), every reward 0\.000, every advantage 0\.$/);
    await cards.first().getByRole('button', { name: 'Show the 3 answers' }).click();
    expect(await cards.first().locator('.completions > li').count()).toBe(3);
    expect(await cards.nth(1).locator('.completions').count()).toBe(0);

    // Beside the held-out gain: every held-out answer is the same text, so one constant reply scores 100%.
    expect(await page.locator('#gain-baseline').textContent()).toMatch(
      /^One constant reply \(“an answer far longer than three tokens …”\) scores 100% on these prompts\. The trained model’s greedy replies (did not collapse|collapsed to one reply)/,
    );

    // The list's row: what ran, with which settings, and its held-out result; no scroll box of its own.
    const row = page.locator('section[aria-labelledby="runs-title"] button.run').first();
    expect(await row.locator('strong').textContent()).toBe('dataset · exemplars · webgrpo-tiny');
    expect(await row.locator('.meta').textContent()).toMatch(/^2 prompts · 1 step · G=3 · T=0\.7 · seed 4 · /);
    expect(await row.locator('.held-out').textContent()).toBe('held-out 0% → 0% at T=0.7, greedy 0% → 0%');
    expect(await page.locator('section[aria-labelledby="runs-title"] ul').evaluate((ul) => getComputedStyle(ul).overflowY)).toBe('visible');
    await context.close();
  });
});

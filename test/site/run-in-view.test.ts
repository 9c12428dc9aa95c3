/**
 * The run the page shows is the run the form would start, and nothing stale stands in for it
 * (issue 43, items 4 and 5), on the production build in headless Chromium at a laptop's size:
 * after a reload the form takes the shown run's method, model and settings; while a new run loads
 * no panel of the previous run is in the right column; an interrupted run's held-out panel does
 * not say the base model is answering; a group with no signal is one line; the run list names
 * each run's method, model, settings and held-out result, in the page's flow. Runs are
 * webgrpo-tiny's (mechanics, seconds each).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chooseTiny, startPlayground, type Playground } from './preview.js';

let playground: Playground;

beforeAll(async () => {
  playground = await startPlayground();
}, 180_000);

afterAll(() => playground?.close());

const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
const chip = (page: Page) => page.locator('section[aria-labelledby="run-title"] h2 .chip');
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

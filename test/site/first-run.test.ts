/**
 * The playground's first run as a person meets it: the production build in headless Chromium, the
 * page opened and Start pressed with no setting changed. The default is LoRA on every layer (on
 * WebAssembly) of the bundled webgrpo-sorter model at sort-words, where the greedy model is mostly
 * wrong (it mostly copies the words in the order given) and every problem has its own answer, and the before/after panel shows its held-out exact
 * match rise, greedy and at temperature 1: 32 held-out problems (never in the model's pretraining
 * corpus nor in the run's training prompts), one greedy reply and two at temperature 1 each. The
 * measured run is in BENCHMARKS ("teach", the first run in a tab). Then the library's own case:
 * exemplars on the bundled webgrpo-reader at named-format, with the settings the page applies on
 * that model (each prompt shown its closest worked example), lifts held-out exact match by more
 * than a constant reply could score.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifacts, startPlayground, type Playground } from './preview.js';

let playground: Playground;
let page: Page;

beforeAll(async () => {
  playground = await startPlayground();
  page = await playground.context.newPage();
}, 180_000);

afterAll(() => playground?.close());

const header = () => page.locator('section[aria-labelledby="run-title"]');
/** The least rise, in points, the first run must show greedy and at T=1 (see the measured run in BENCHMARKS "teach"). */
// Measured in the tab: greedy 25% -> 81%, T=1 33% -> 70% on 32 problems (3.1 points each); in Node
// under six seeds nobody chose the least rise was +47.9 greedy and +44.3 at T=1 on 96: the goal, +20, holds with room.
const FIRST_RUN_MIN_GAIN = 20;
const FIRST_RUN_MIN_GAIN_T1 = 20;
const percents = (text: string | null) => (text ?? '').split('→').map((side) => Number(side.trim().replace('%', '')));

describe('the first run', { timeout: 900_000 }, () => {
  it('teaches the sorter model sort-words: held-out exact match rises greedy and at T=1, with no setting changed', async () => {
    await page.goto(playground.baseURL);
    await expect.poll(() => page.locator('header .device').textContent()).toMatch(/WebGPU|WebAssembly/);
    expect(await page.getByLabel('Model', { exact: true }).inputValue()).toBe('sorter');
    expect(await page.getByLabel('Task', { exact: true }).inputValue()).toBe('sort-words');
    expect(await page.getByRole('radio', { name: 'LoRA (every layer)' }).isChecked()).toBe(true);
    const started = Date.now();
    await page.getByRole('button', { name: 'Start run' }).click();
    // 96 steps: on webgrpo-skill (the same shapes) 166 s on 2 cores at load 1.3 to 2.3, 259 s and 327 s at load 3 to 10; on webgrpo-sorter 343 s at load 8 to 14 (BENCHMARKS "teach"); room for a busier machine.
    await expect.poll(() => header().locator('h2 .chip').textContent(), { timeout: 840_000, interval: 1000 }).toBe('completed');
    const seconds = (Date.now() - started) / 1000;

    const panel = page.locator('section[aria-labelledby="eval-title"]');
    expect(await panel.locator('p.hint').first().textContent()).toMatch(/32 prompts the run never trains on, 2 answers each at temperature 1:\s+the base model before the first step, and the trained one after epoch 1/);
    const [before, after] = percents(await panel.locator('dt:text-is("Exact match") + dd').first().textContent());
    const [greedyBefore, greedyAfter] = percents((await panel.locator('dd.greedy').textContent())!.replace(/^\s*greedy \(T=0\):/, '').split(',')[0]);
    const rows = await panel.locator('tbody tr').all();
    const examples = [];
    const answers = new Set<string>();
    for (const row of rows) {
      const [base, trained] = await row.locator('td pre').allTextContents();
      const answer = (await row.locator('th .answer').textContent()) ?? '';
      answers.add(answer);
      examples.push(`${await row.locator('th .prompt').textContent()} (${answer}): ${JSON.stringify(base)} -> ${JSON.stringify(trained)}`);
    }
    console.log(`first run in ${seconds.toFixed(0)} s: held-out exact match greedy ${greedyBefore}% -> ${greedyAfter}%, T=1 ${before}% -> ${after}%\n${examples.join('\n')}`);
    await panel.screenshot({ path: join(artifacts, 'first-run-held-out-1280.png') });
    // The base model is mostly wrong greedily; the run lifts it there and at T=1 (measured in the
    // tab with these settings: see BENCHMARKS "teach"), on problems each with its own answer.
    expect(greedyBefore).toBeLessThan(50);
    expect(greedyAfter, `greedy ${greedyBefore}% -> ${greedyAfter}%`).toBeGreaterThanOrEqual(greedyBefore + FIRST_RUN_MIN_GAIN);
    expect(after, `T=1 ${before}% -> ${after}%`).toBeGreaterThanOrEqual(before + FIRST_RUN_MIN_GAIN_T1);
    expect(answers.size).toBe(rows.length);
    expect(playground.errors).toEqual([]);
  });

  it('moves to what the tiny model can learn when it is picked, and back with the skill model', async () => {
    const field = (label: string) => page.getByLabel(label, { exact: true });
    await field('Model').selectOption('tiny');
    expect(await field('Task').inputValue()).toBe('digits');
    expect([await field('Prompts').inputValue(), await field('Batch').inputValue(), await field('Learning rate').inputValue()]).toEqual(['8', '2', '0.005']);
    await field('Model').selectOption('skill');
    expect(await field('Task').inputValue()).toBe('sort-words');
    expect([await field('Prompts').inputValue(), await field('Batch').inputValue(), await field('Learning rate').inputValue(), await field('Epochs').inputValue(), await field('Max tokens').inputValue()]).toEqual(['1536', '16', '0.002', '1', '24']);
    await field('Task').selectOption('copy-format');
    expect([await field('Prompts').inputValue(), await field('Batch').inputValue(), await field('Learning rate').inputValue(), await field('Epochs').inputValue()]).toEqual(['64', '8', '0.002', '2']);
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    expect([await field('Task').inputValue(), await field('Learning rate').inputValue(), await field('Epochs').inputValue(), await field('Updates per step').inputValue()]).toEqual(['copy-format', '0.01', '10', '1']);
  });

  it('teaches the reader named-format with the exemplars it keeps, each prompt shown its closest one', async () => {
    const field = (label: string) => page.getByLabel(label, { exact: true });
    await page.goto(playground.baseURL);
    // The page reopens on the last run, if any (the first test's), and its form follows that run: pick only once it has.
    await expect.poll(async () => (await page.getByRole('heading', { name: 'No run yet' }).count()) + (await header().count()), { timeout: 60_000 }).toBeGreaterThan(0);
    await page.getByRole('radio', { name: 'Training-free: exemplars' }).check();
    await field('Model').selectOption('reader');
    await field('Task').selectOption('named-format');
    expect([await field('Prompts').inputValue(), await field('Experiences per prompt').inputValue(), await field('Exemplars kept').inputValue()]).toEqual(['48', '1', '24']);
    // Shown the whole library the reader writes one format for every word: the page says so before Start.
    const setupPanel = page.locator('section[aria-labelledby="setup-title"]');
    await field('Experiences per prompt').fill('0');
    await expect.poll(() => setupPanel.textContent()).toContain('Experiences per prompt to 1');
    await field('Experiences per prompt').fill('1');
    await expect.poll(() => setupPanel.textContent()).not.toContain('Experiences per prompt to 1');
    await page.getByRole('button', { name: 'Start run' }).click();
    // Wait for this run's header, then its end.
    await expect.poll(() => header().textContent(), { timeout: 60_000 }).toContain('named-format');
    await expect.poll(() => header().locator('h2 .chip').textContent(), { timeout: 400_000, interval: 1000 }).toBe('completed');
    expect(await header().textContent()).toContain('webgrpo-reader');

    const panel = page.locator('section[aria-labelledby="eval-title"]');
    const [before, after] = percents(await panel.locator('dt:text-is("Exact match") + dd').first().textContent());
    const replies = [];
    for (const row of (await panel.locator('tbody tr').all()).slice(0, 6)) {
      const [base, trained] = await row.locator('td pre').allTextContents();
      replies.push(`${await row.locator('th .prompt').textContent()} (${await row.locator('th .answer').textContent()}): ${JSON.stringify(base)} -> ${JSON.stringify(trained)}`);
    }
    console.log(`reader exemplars, held-out exact match ${before}% -> ${after}%\n${replies.join('\n')}`);
    // Measured in headless Chromium: 0% -> 81% in about 9 s ("wrap 2: box": "#box#" -> "<box>").
    // In Node on six seed pairs the T=1 gain is +36 to +67 points; a constant reply scores under 30% here.
    expect(after, `held-out exact match ${before}% -> ${after}%`).toBeGreaterThanOrEqual(before + 20);
    expect(after).toBeGreaterThan(30);
    expect(playground.errors).toEqual([]);
  });
});

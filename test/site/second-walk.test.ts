/**
 * The playground past its first run, walked as a person meets it, at a laptop's 1280x800 and a
 * phone's 375x812, on the production build in headless Chromium. Every test opens its own browser
 * context (its own IndexedDB), so none reads another's runs. The runs are the random-weight
 * webgrpo-tiny model's, as short as each check allows: these test mechanics, not learning.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifacts, chooseTiny, startPlayground, type Playground } from './preview.js';

let playground: Playground;

beforeAll(async () => {
  playground = await startPlayground();
}, 180_000);

afterAll(() => playground?.close());

const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 812 };
const WIDTHS = [LAPTOP, PHONE] as const;

interface Visit {
  page: Page;
  /** Console errors and warnings of the page and its workers. */
  errors: string[];
  warnings: string[];
  close(): Promise<void>;
}

/** A fresh context (nothing stored) at `viewport`, with the page open and ready. */
async function visit(viewport: { width: number; height: number }): Promise<Visit> {
  const context = await playground.session.browser.newContext({ viewport, acceptDownloads: true });
  const errors: string[] = [];
  const warnings: string[] = [];
  context.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
    if (msg.type() === 'warning') warnings.push(msg.text());
  });
  context.on('weberror', (error) => errors.push(String(error.error())));
  const page = await context.newPage();
  await page.goto(playground.baseURL);
  await page.getByRole('heading', { name: 'No run yet' }).waitFor();
  return { page, errors, warnings, close: () => context.close() };
}

const field = (page: Page, label: string) => page.getByLabel(label, { exact: true });
const header = (page: Page) => page.locator('section[aria-labelledby="run-title"]');
const chip = (page: Page) => header(page).locator('h2 .chip');

async function settings(page: Page, values: Record<string, string | number>): Promise<void> {
  for (const [label, value] of Object.entries(values)) await field(page, label).fill(String(value));
}

/** Starts a run and waits for its end: a new run in the list, Start back, and the run completed. */
async function runToEnd(page: Page): Promise<void> {
  const count = page.locator('#runs-title .count');
  const before = Number(await count.textContent());
  await page.getByRole('button', { name: 'Start run' }).click();
  await expect.poll(async () => Number(await count.textContent()), { timeout: 60_000 }).toBe(before + 1);
  await expect.poll(() => page.locator('button.start').textContent(), { timeout: 120_000, interval: 250 }).toBe('Start run');
  expect(await chip(page).textContent()).toBe('completed');
}

/** A JSONL upload through the file field. */
async function upload(page: Page, name: string, lines: string[]): Promise<void> {
  await field(page, 'Task').selectOption('upload');
  await field(page, 'JSONL file').setInputFiles({ name, mimeType: 'application/jsonl', buffer: Buffer.from(`${lines.join('\n')}\n`) });
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(artifacts, `second-walk-${name}.png`) });
const tag = (viewport: { width: number }) => (viewport.width < 600 ? '375' : '1280');

/** Opens a group shown as one line (every reward tied: the tiny model's few tokens may tie), to read its prompt. */
async function open(card: Locator): Promise<void> {
  const show = card.getByRole('button', { name: /^Show the \d+ answers$/ });
  if (await show.count()) await show.click();
}

describe('the playground, second walk', { timeout: 300_000 }, () => {
  it.each(WIDTHS)('shows the exact text a chat model read, says when a prompt skipped its template, and applies it on request (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    await chooseTiny(page, { exemplars: true });
    const items = ['{"prompt": "Sort: pear fig", "answer": "fig pear"}', '{"prompt": "Sort: yak ant", "answer": "ant yak"}'];
    await upload(page, 'plain.jsonl', items);
    const setup = page.locator('section[aria-labelledby="setup-title"]');
    const note = setup.getByRole('note');
    await expect.poll(() => note.textContent()).toMatch(/Every item gives a plain prompt: webgrpo-tiny\s+is a chat model and would read it as raw text, without its chat template/);
    await note.scrollIntoViewIfNeeded();
    await shot(page, `raw-note-${tag(viewport)}`);
    await settings(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3 });
    await runToEnd(page);

    const card = page.locator('article.group').first();
    expect(await card.locator('.chip.raw').textContent()).toBe('raw prompt, no chat template');
    await open(card);
    await card.locator('details.seen summary').click();
    const exact = card.getByLabel('The exact text the model read');
    await expect.poll(() => exact.textContent()).toMatch(/^Sort: (pear fig|yak ant)$/);
    expect(await card.locator('details.seen').textContent()).toContain('Sent as raw text: webgrpo-tiny is a chat model');
    await shot(page, `raw-prompt-${tag(viewport)}`);

    await note.getByRole('button', { name: 'Use the chat template' }).click();
    expect(await note.count()).toBe(0);
    expect(await setup.textContent()).toContain('plain.jsonl: 2 items, each plain prompt sent as a user message through the chat template.');
    await runToEnd(page);
    const templated = page.locator('article.group').first();
    expect(await templated.locator('.chip.raw').count()).toBe(0);
    await open(templated);
    await templated.locator('details.seen summary').click();
    await expect.poll(() => templated.getByLabel('The exact text the model read').textContent()).toMatch(/^<s><\|im_start\|>user\nSort: (pear fig|yak ant)<\|im_end\|>\n<\|im_start\|>assistant\n$/);
    await templated.scrollIntoViewIfNeeded();
    await shot(page, `templated-prompt-${tag(viewport)}`);
    expect(errors).toEqual([]);
    await close();
  });

  it('brings the comparison into view with the focus on it, each run\'s held-out before and after first, at both widths', async () => {
    const { page, errors, close } = await visit(LAPTOP);
    await chooseTiny(page, { exemplars: true });
    for (const temperature of ['0', '1']) {
      await field(page, 'Task').selectOption('alphabetise');
      await settings(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3, Temperature: temperature });
      await runToEnd(page);
    }
    const runs = page.locator('section[aria-labelledby="runs-title"]');
    for (const viewport of WIDTHS) {
      await page.setViewportSize(viewport);
      const picks = runs.getByRole('checkbox', { name: /^Compare / });
      await picks.nth(0).check();
      await picks.nth(1).check();
      const compare = runs.getByRole('button', { name: 'Compare 2 runs' });
      await compare.scrollIntoViewIfNeeded();
      await compare.click();
      const panel = page.locator('section[aria-labelledby="compare-title"]');
      await panel.waitFor();
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('compare-title');
      const top = await panel.evaluate((el) => el.getBoundingClientRect().top);
      expect(top, 'the comparison starts on screen').toBeGreaterThanOrEqual(-1);
      expect(top).toBeLessThan(viewport.height / 2);
      const outcomes = panel.getByRole('list', { name: /^Held-out prompts, never trained on/ });
      const rows = await outcomes.getByRole('listitem').allTextContents();
      // Above the curves, and on the first screen.
      expect(await outcomes.evaluate((el) => el.getBoundingClientRect().bottom)).toBeLessThan(viewport.height);
      // Temperature 0 is greedy: one answer per held-out prompt; temperature 1 keeps two, with its
      // greedy pass beside it: a greedy row for each run.
      expect(rows).toHaveLength(3);
      expect(rows.join('\n').match(/greedy, \d+ prompts × 1 answer/g)).toHaveLength(2);
      expect(rows.join('\n').match(/T=1, \d+ prompts × 2 answers/g)).toHaveLength(1);
      for (const row of rows) expect(row).toMatch(/\d+% → \d+%.*\d\.\d{3} → \d\.\d{3}/s);
      // Beside the gains, per run: what one constant reply scores on its held-out prompts, and whether its replies collapsed to it.
      const baselines = await panel.getByRole('list', { name: /^What one reply or one format scores/ }).getByRole('listitem').allTextContents();
      expect(baselines).toHaveLength(2);
      for (const note of baselines) expect(note).toMatch(/^#\d .+: One constant reply \(“.+”\) scores \d+% on these prompts\. The trained model’s greedy replies (did not collapse|collapsed to one reply)/);
      await shot(page, `compare-${tag(viewport)}`);
      await panel.getByRole('button', { name: 'Close comparison' }).click();
      await picks.nth(0).uncheck();
      await picks.nth(1).uncheck();
    }
    expect(errors).toEqual([]);
    await close();
  });

  it.each(WIDTHS)('puts the live groups on the screen Start scrolls to, the widest reward spread first (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    await chooseTiny(page, { exemplars: true });
    await field(page, 'Task').selectOption('alphabetise');
    // Long enough to be live when the first group is in: 8 prompts, 24 tokens each.
    await settings(page, { Prompts: 8, 'Group size': 4, Epochs: 1, Batch: 4, 'Max tokens': 24 });
    await page.getByRole('button', { name: 'Start run' }).click();
    const group = page.locator('article.group, article.live').first();
    await group.waitFor({ timeout: 60_000 });
    expect(await chip(page).textContent()).toBe('running');
    // The smooth scroll to the run header settles; the group is then on that screen.
    const settled = () => page.evaluate(() => new Promise<boolean>((r) => { const y = window.scrollY; setTimeout(() => r(Math.abs(window.scrollY - y) < 1), 400); }));
    await expect.poll(settled, { interval: 200 }).toBe(true);
    const headerTop = await header(page).evaluate((el) => el.getBoundingClientRect().top);
    expect(headerTop).toBeGreaterThanOrEqual(-1);
    const groupTop = await group.evaluate((el) => el.getBoundingClientRect().top);
    expect(groupTop, `the group starts ${groupTop}px from the top of a ${viewport.height}px screen`).toBeLessThan(viewport.height);
    await shot(page, `live-${tag(viewport)}`);
    await expect.poll(() => chip(page).textContent(), { timeout: 120_000, interval: 250 }).toBe('completed');

    // Both steps: cards in order of spread, the groups with no signal last and counted.
    for (const step of [1, 2]) {
      await page.getByRole('slider', { name: 'Step in view' }).fill(String(step));
      const stats = await page.locator('article.group .stats').allTextContents();
      const spreads = stats.map((s) => Number(/spread (\d+\.\d+)/.exec(s)?.[1]));
      expect(spreads).toHaveLength(4);
      expect(spreads).toEqual([...spreads].sort((a, b) => b - a));
      const flat = spreads.filter((s) => s === 0).length;
      const order = await page.locator('#groups-order').textContent();
      if (flat) {
        expect(order).toContain(`${flat} of 4 groups ${flat === 1 ? 'has' : 'have'} no signal`);
        // Which prompts, each with the reward all its answers tied at.
        expect(order?.match(/#\d+ \(all -?\d+\.\d\d\)/g)).toHaveLength(flat);
        await page.locator('#groups-order').scrollIntoViewIfNeeded();
        await shot(page, `no-signal-step${step}-${tag(viewport)}`);
      }
      else expect(order).toBe('Widest spread of rewards first.');
    }
    expect(errors).toEqual([]);
    await close();
  });

  it.each(WIDTHS)('resumes a run on the device it ran on and leaves Device as the person set it (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    await chooseTiny(page, { exemplars: true });
    await field(page, 'Task').selectOption('alphabetise');
    await settings(page, { Prompts: 8, 'Group size': 2, Epochs: 2, Batch: 2, 'Max tokens': 24 });
    expect(await field(page, 'Device').inputValue()).toBe('auto');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.locator('article.group').first().waitFor({ timeout: 60_000 });
    await header(page).getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => chip(page).textContent(), { timeout: 60_000 }).toBe('cancelled');
    // Back another day: the page opens with no model loaded, and the run is resumed from its list.
    await page.reload();
    await expect.poll(() => chip(page).textContent(), { timeout: 30_000 }).toBe('cancelled');
    expect(await field(page, 'Device').inputValue()).toBe('auto');
    await header(page).getByRole('button', { name: 'Resume run' }).click();
    const model = page.locator('section[aria-labelledby="model-title"]');
    await expect.poll(() => model.textContent(), { timeout: 60_000 }).toContain('On WebAssembly for the resumed run. Device stays as you set it for new runs.');
    expect(await field(page, 'Device').inputValue()).toBe('auto');
    await expect.poll(() => page.locator('button.start').textContent(), { timeout: 120_000, interval: 250 }).toBe('Start run');
    expect(await chip(page).textContent()).toBe('completed');
    expect(await field(page, 'Device').inputValue()).toBe('auto');
    expect(await model.textContent()).not.toContain('as requested');
    await shot(page, `resumed-device-${tag(viewport)}`);
    // The next run is the person's again: Auto, which says why it chose WebAssembly here.
    await chooseTiny(page, { exemplars: true });
    await field(page, 'Task').selectOption('alphabetise');
    await settings(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3 });
    await runToEnd(page);
    expect(await field(page, 'Device').inputValue()).toBe('auto');
    await expect.poll(() => model.textContent()).toContain('Auto chose WebAssembly');
    expect(errors).toEqual([]);
    await close();
  });

  it.each(WIDTHS)('waits for a person\'s ratings in a LoRA run too, keeps the box as it was ticked, and downloads its adapter as PEFT\'s zip (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    await chooseTiny(page, { exemplars: true });
    const box = page.getByRole('checkbox', { name: /Rate completions myself/ });
    await box.check();
    await page.getByRole('radio', { name: 'LoRA (every layer)' }).check();
    expect([await box.isChecked(), await box.isDisabled()]).toEqual([true, false]);
    await settings(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3 });
    await page.getByRole('button', { name: 'Start run' }).click();
    // The loop in the model's worker waits for each group's ratings, given on the page.
    const panel = page.locator('section[aria-labelledby="rate-title"]');
    const given = [5, 1, 4, 2];
    for (const [i, stars] of given.entries()) {
      await expect.poll(() => panel.locator('#rate-title').textContent(), { timeout: 60_000 }).toContain(`prompt #${Math.floor(i / 2) + 1}`);
      if (i === 0) {
        await expect.poll(() => header(page).locator('.stage').textContent()).toContain('Waiting for your ratings of prompt #1');
        await shot(page, `lora-rating-${tag(viewport)}`);
      }
      await panel.getByRole('group', { name: `Rate completion ${(i % 2) + 1}` }).getByRole('button', { name: stars === 5 ? 'Thumbs up (5)' : stars === 1 ? 'Thumbs down (1)' : String(stars), exact: true }).click();
    }
    await expect.poll(() => page.locator('button.start').textContent(), { timeout: 120_000, interval: 250 }).toBe('Start run');
    expect(await chip(page).textContent()).toBe('completed');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await header(page).locator('p.hint').first().textContent()).toContain('rewards you×1');
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as { reward: number });
    expect(lines.map((line) => line.reward)).toEqual(given.map((stars) => (stars - 1) / 4));

    // Its adapter downloads as what the button says: PEFT's zip.
    const button = header(page).getByRole('button', { name: 'Adapter (PEFT zip)' });
    expect(await header(page).getByRole('button', { name: 'Adapter (JSON)' }).count()).toBe(0);
    const [zip] = await Promise.all([page.waitForEvent('download'), button.click()]);
    expect(zip.suggestedFilename()).toMatch(/-adapter-step1-peft\.zip$/);
    expect((await readFile((await zip.path()) as string)).subarray(0, 2).toString('latin1')).toBe('PK');
    expect(errors).toEqual([]);
    await close();
  });

  it('names the head adapter\'s file as JSON, and it is JSON', async () => {
    const { page, errors, close } = await visit(PHONE);
    await chooseTiny(page);
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    await settings(page, { Prompts: 2, 'Group size': 2, Epochs: 1, Batch: 2, 'Max tokens': 3, 'Updates per step': 1 });
    await runToEnd(page);
    expect(await header(page).getByRole('button', { name: 'Adapter (PEFT zip)' }).count()).toBe(0);
    const [file] = await Promise.all([page.waitForEvent('download'), header(page).getByRole('button', { name: 'Adapter (JSON)' }).click()]);
    expect(file.suggestedFilename()).toMatch(/-adapter-step1\.json$/);
    expect(JSON.parse(await readFile((await file.path()) as string, 'utf8'))).toMatchObject({ format: 'webgrpo.adapter', target: 'lm_head' });
    expect(errors).toEqual([]);
    await close();
  });

  it.each(WIDTHS)('says what was measured and what the run will do, in agreement with what it does (%o)', async (viewport) => {
    const { page, errors, close } = await visit(viewport);
    const empty = page.locator('section.empty');
    expect(await empty.textContent()).toMatch(/to sort words in 96 steps\s+\(About (\d+ min )?\d+ s \(measured in headless Chromium on 2 shared cores, WebAssembly: [\d.]+ s to load and answer the held-out prompts, then [\d.]+ s per step for 96 steps; BENCHMARKS “playground-steps”\)/);
    // What the first run changes, in one sentence, greedy and at temperature 1 both.
    expect(await page.locator('#first-run-change').textContent()).toMatch(/^It learns to sort the words instead of copying them in the order given .*: measured in headless Chromium, held-out exact match went from \d+% to \d+% greedy and from \d+% to \d+% at temperature 1\.$/);
    expect(await empty.textContent()).not.toContain('two minutes');
    expect(await page.locator('details.explainer').textContent()).toMatch(/by default, small low-rank LoRA adapters on every layer’s attention and MLP/);
    // The page header keeps to two lines once a model is loaded and its device named.
    const pageHeader = page.locator('body header').first();
    await expect.poll(() => page.locator('header .device').textContent()).toMatch(/WebGPU|WebAssembly/);
    const heightBefore = await pageHeader.evaluate((el) => el.getBoundingClientRect().height);
    await page.getByRole('button', { name: 'Load model' }).click();
    await expect.poll(() => page.locator('header .device').textContent(), { timeout: 60_000 }).toMatch(/model on\s*wasm/);
    const lines = await page.locator('header').first().evaluate((el) => {
      const lineHeight = parseFloat(getComputedStyle(el.querySelector('.device .detail') ?? el).lineHeight) || 20;
      const device = el.querySelector('.device') as HTMLElement;
      return Math.round(device.getBoundingClientRect().height / lineHeight);
    });
    if (viewport.width >= 1000) {
      expect(lines, 'lines of the device status').toBeLessThanOrEqual(2);
      // Not a line taller: the status wraps beside the title, within its height give or take a few pixels.
      expect(await pageHeader.evaluate((el) => el.getBoundingClientRect().height)).toBeLessThan(heightBefore + 8);
    }
    await shot(page, `first-screen-${tag(viewport)}`);

    await chooseTiny(page, { exemplars: true });
    // A JSON mistake is placed on the file's line, by its column there.
    await upload(page, 'broken.jsonl', ['{"prompt": "a", "answer": "a"}', '{"prompt": "b" "answer": "b"}']);
    const setup = page.locator('section[aria-labelledby="setup-title"]');
    await expect.poll(() => setup.getByRole('alert').textContent()).toMatch(/^broken\.jsonl line 2 is not valid JSON \(at column 16\): Expected ',' or '\}' after property value/);
    expect(await setup.getByRole('alert').textContent()).not.toMatch(/line 1/);
    // Twelve items, with Prompts at 64: the run trains on the twelve, and the summary says so.
    const twelve = Array.from({ length: 12 }, (_, i) => `{"prompt": "Echo ${i}", "answer": "${i}"}`);
    await upload(page, 'twelve.jsonl', twelve);
    await settings(page, { Prompts: 64, 'Group size': 2, Epochs: 2, Batch: 8, 'Max tokens': 2 });
    const plan = page.locator('#run-plan');
    await expect.poll(() => plan.textContent()).toMatch(/twelve\.jsonl holds 12 items, fewer than Prompts asks for: the run trains on all 12, and holds none out\./);
    expect((await plan.textContent())?.replace(/\s+/g, ' ')).toContain('for 8 prompts, then updates the library once: 24 groups, 4 steps in all.');
    await plan.scrollIntoViewIfNeeded();
    await shot(page, `plan-${tag(viewport)}`);
    await runToEnd(page);
    expect((await header(page).getByRole('status').first().textContent())?.replace(/\s+/g, ' ')).toContain('24 / 24 groups · 4 of 4 steps done');
    // One exemplar is "1 exemplar".
    const library = await page.locator('section[aria-labelledby="charts-title"] dt:text-is("Library") ~ dd.sub').textContent();
    const [, lessons, lessonNoun, exemplars, exemplarNoun] = /^(\d+) (lessons?) · (\d+) (exemplars?)$/.exec(library ?? '') ?? [];
    expect(lessonNoun).toBe(Number(lessons) === 1 ? 'lesson' : 'lessons');
    expect(exemplarNoun).toBe(Number(exemplars) === 1 ? 'exemplar' : 'exemplars');
    expect(errors).toEqual([]);
    await close();
  });

  it('loads a bundled model with no console warning about its files\' length, which the server now sends', async () => {
    const { page, errors, warnings, close } = await visit(LAPTOP);
    const response = await page.request.get(new URL('models/webgrpo-skill/tokenizer.json', playground.baseURL).href, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(response.headers()['content-encoding']).toBeUndefined();
    expect(Number(response.headers()['content-length'])).toBe((await response.body()).length);
    await page.getByRole('button', { name: 'Load model' }).click();
    await expect.poll(() => page.locator('section[aria-labelledby="model-title"]').getByRole('status').textContent(), { timeout: 60_000 }).toMatch(/Ready\s*on wasm/);
    expect(warnings.filter((w) => /content-length/i.test(w))).toEqual([]);
    expect(errors).toEqual([]);
    await close();
  });
});

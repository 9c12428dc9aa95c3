/**
 * The playground walked the way a newcomer walks it, keyboard included, on the production build in
 * headless Chromium, whose only WebGPU adapter is SwiftShader (software): what Auto picks and says,
 * where the run and the focus go on Start and Pause, that a finished run never reads as
 * interrupted, the held-out answers before and after training, a person's ratings as the reward, and the setup form's answers to empty numbers, a
 * bad upload after a good one, a moved task, a run imported twice and an endpoint nobody listens on.
 */
import { createServer } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { artifacts, chooseTiny, startPlayground, type Playground } from './preview.js';

let playground: Playground;
let page: Page;

const setup = () => page.locator('section[aria-labelledby="setup-title"]');
const header = () => page.locator('section[aria-labelledby="run-title"]');
const statusChip = () => header().locator('h2 .chip');
const field = (label: string) => page.getByLabel(label, { exact: true });

async function smallRun(prompts: number): Promise<void> {
  await field('Task').selectOption('alphabetise');
  await field('Prompts').fill(String(prompts));
  await field('Group size').fill('3');
  await field('Epochs').fill('1');
  await field('Batch').fill('2');
  await field('Max tokens').fill('12');
}

/** A port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

beforeAll(async () => {
  playground = await startPlayground();
  page = await playground.context.newPage();
  await page.goto(playground.baseURL);
  await page.getByRole('heading', { name: 'No run yet' }).waitFor();
}, 180_000);

afterAll(() => playground?.close());

describe('the playground, walked', { timeout: 240_000 }, () => {
  it('shows Start on the first screen of a laptop, below the task and method', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: join(artifacts, 'walk-first-screen-1280x800.png') });
    const box = await page.getByRole('button', { name: 'Start run' }).boundingBox();
    expect(box!.y + box!.height).toBeLessThan(800);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('Auto keeps the model off a software WebGPU adapter and says why', async () => {
    await expect.poll(() => page.locator('header .device').textContent()).toMatch(/WebGPU \(software\).*swiftshader.*Auto uses WebAssembly/is);
    expect(await field('Device').inputValue()).toBe('auto');
    await page.getByRole('button', { name: 'Load model' }).click();
    const model = page.locator('section[aria-labelledby="model-title"]');
    await expect.poll(() => model.getByRole('status').textContent(), { timeout: 60_000 }).toMatch(/Ready\s*on wasm/);
    expect(await model.textContent()).toContain('Auto chose WebAssembly: the only WebGPU adapter here is software');
    await expect.poll(() => page.locator('header .device').textContent()).toMatch(/model on\s*wasm/);
  });

  it('names an emptied or out-of-range number, and starts nothing until it is fixed', async () => {
    await chooseTiny(page, { exemplars: true });
    await smallRun(2);
    await field('Group size').fill('');
    await expect.poll(() => setup().textContent()).toContain('Group size: enter a whole number from 2 to 16.');
    await page.screenshot({ path: join(artifacts, 'walk-setup-problem-1280.png') });
    expect(await setup().textContent()).not.toContain('Each step samples');
    await field('Temperature').fill('5');
    await expect.poll(() => setup().textContent()).toContain('Temperature: 5 is not a number from 0 to 2.');
    const start = page.getByRole('button', { name: 'Start run' });
    expect(await start.getAttribute('aria-disabled')).toBe('true');
    await start.focus();
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    expect(await page.getByRole('heading', { name: 'No run yet' }).isVisible()).toBe(true);
    await field('Group size').fill('3');
    await field('Temperature').fill('0.7');
    await expect.poll(() => setup().textContent()).toContain('Each step samples a group of 3 completions');
    expect(await start.getAttribute('aria-disabled')).toBeNull();
  });

  it('moves a built-in task for the gradient method, and back when another method can run it', async () => {
    await field('Task').selectOption('alphabetise');
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    expect(await field('Task').inputValue()).toBe('digits');
    await page.getByRole('radio', { name: 'Router (which prompt variant)' }).check();
    expect(await field('Task').inputValue()).toBe('alphabetise');
    await page.getByRole('radio', { name: 'Gradient (adapter)' }).check();
    await field('Task').selectOption('shout'); // chosen by hand: it stays
    await page.getByRole('radio', { name: 'Training-free: exemplars' }).check();
    expect(await field('Task').inputValue()).toBe('shout');
    // The method's name is the radio's name; its explanation is a description.
    const radio = page.getByRole('radio', { name: 'Training-free: exemplars' });
    expect(await radio.getAttribute('aria-describedby')).toBe('method-summary');
    expect(await setup().textContent()).toContain('the exemplars curve is noise');
  });

  it('keeps Start focused, brings the live run into view, keeps Pause focused, and never flashes "interrupted"', async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.screenshot({ path: join(artifacts, 'walk-setup-375.png') });
    // Long enough (8 prompts x 2 epochs, 48 tokens) to be still running when Pause is pressed.
    await smallRun(8);
    await field('Epochs').fill('2');
    await field('Max tokens').fill('48');
    // Every text the run's status chip shows, from the first one to the last.
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { chipTexts: string[] }).chipTexts = seen;
      const record = () => {
        const text = document.querySelector('section[aria-labelledby="run-title"] h2 .chip')?.textContent ?? '';
        if (text && seen.at(-1) !== text) seen.push(text);
      };
      new MutationObserver(record).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const start = page.getByRole('button', { name: 'Start run' });
    await start.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => statusChip().textContent(), { timeout: 60_000 }).toBe('running');
    expect(await page.evaluate(() => document.activeElement?.classList.contains('start'))).toBe(true);
    // At 375 px the run sits below the setup and the run list; Start scrolled it into view.
    await expect
      .poll(() => header().evaluate((el) => Math.round(el.getBoundingClientRect().top)), { timeout: 10_000 })
      .toBeLessThan(200);

    const toggle = header().getByRole('button', { name: 'Pause' });
    await toggle.focus();
    await page.keyboard.press('Enter');
    expect(await statusChip().textContent()).toBe('paused');
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Resume');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.textContent?.trim())).toBe('Pause');
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');
    await page.waitForTimeout(300);
    const seen = await page.evaluate(() => (window as unknown as { chipTexts: string[] }).chipTexts);
    expect(seen).not.toContain('interrupted');
    expect(seen.at(-1)).toBe('completed');
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('answers held-out prompts before and after training, side by side, as text', async () => {
    const panel = page.locator('section[aria-labelledby="eval-title"]');
    await panel.waitFor({ timeout: 30_000 });
    expect(await panel.locator('p.hint').first().textContent()).toMatch(/8 prompts the run never trains on, 2 answers each at temperature 0\.7:\s+the base model before the first step, and the trained one after epoch 2/);
    const tiles = panel.locator('dl.tiles > div');
    expect(await tiles.locator('dt').allTextContents()).toEqual(['Exact match', 'pass@2', 'Mean reward']);
    expect(await tiles.first().locator('dd').first().textContent()).toMatch(/^\d+% → \d+%$/);
    const rows = panel.locator('tbody tr');
    expect(await rows.count()).toBe(4);
    for (const row of await rows.all()) {
      expect(await row.locator('th .answer').textContent()).toMatch(/^answer: Sorted: /);
      // Each side is the model's text in a <pre>, never markup.
      expect(await row.locator('td pre').count()).toBe(2);
      expect(await row.locator('td pre *').count()).toBe(0);
    }
    await panel.screenshot({ path: join(artifacts, 'walk-held-out-1280.png') });
  });

  it('shades tokens by entropy, by the ratio to the sampling model and by their share of the gradient, with the scale shown', async () => {
    const view = field('Shade tokens by');
    const purple = () => page.locator('article.group .tok').evaluateAll((els) => els.filter((el) => getComputedStyle(el).backgroundColor.startsWith('rgba(124, 58, 237')).length);
    await view.selectOption('entropy');
    await expect.poll(purple, { timeout: 30_000 }).toBeGreaterThan(5);
    expect(await page.locator('.shading .legend').textContent()).toContain('4 nats');
    expect(await page.locator('article.group .tok').first().getAttribute('title')).toMatch(/^entropy \d+\.\d{3} nats$/);
    await view.selectOption('gradient');
    await expect.poll(() => page.locator('article.group .tok').first().getAttribute('title')).toMatch(/% of the group's loss gradient$/);
    // Same model, same tokens: the ratio of the model now to the sampler is 1 (no shade) everywhere.
    await view.selectOption('ratio');
    await expect.poll(() => page.locator('article.group .tok').first().getAttribute('title')).toMatch(/^ratio now \/ when sampled = 1\.000$/);
    await view.selectOption('probability');
  });

  it('shades a stored run whose token pieces were not kept as soon as its model is loaded, the groups in view', async () => {
    // As a run trained elsewhere comes: no pieces kept beside it, and no model loaded after a reload.
    await page.evaluate(
      () =>
        new Promise<void>((resolve, reject) => {
          const open = indexedDB.open('webgrpo-playground');
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const tx = open.result.transaction('pieces', 'readwrite');
            tx.objectStore('pieces').clear();
            tx.oncomplete = () => {
              open.result.close();
              resolve();
            };
            tx.onerror = () => reject(tx.error);
          };
        }),
    );
    await page.reload();
    await page.locator('article.group').first().waitFor();
    const shaded = () => page.locator('article.group .tok').count();
    expect(await shaded()).toBe(0);
    await page.getByRole('button', { name: 'Load model' }).click();
    await expect.poll(shaded, { timeout: 60_000 }).toBeGreaterThan(5);
  });

  it('waits for a person\'s ratings as the reward, by keyboard or buttons, and stores and exports them', async () => {
    await page.getByLabel(/Rate completions myself/).check();
    await smallRun(2);
    await page.getByRole('button', { name: 'Start run' }).click();
    const panel = page.locator('section[aria-labelledby="rate-title"]');
    await panel.waitFor({ timeout: 60_000 });
    await expect.poll(() => header().locator('.stage').textContent()).toContain('Waiting for your ratings of prompt #1');
    await page.screenshot({ path: join(artifacts, 'walk-rating-1280.png') });
    // Keyboard: 1-5 rate the focused completion, and the focus moves to the next one.
    await panel.locator('li').first().focus();
    await page.keyboard.press('5');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Completion 2, not rated');
    await page.keyboard.press('1');
    await page.keyboard.press('3');
    // The second group (batch of two prompts): buttons, thumbs included.
    await expect.poll(() => panel.locator('#rate-title').textContent(), { timeout: 60_000 }).toContain('prompt #2');
    await panel.getByRole('button', { name: 'Thumbs up (5)' }).first().click();
    await panel.getByRole('group', { name: 'Rate completion 2' }).getByRole('button', { name: '4' }).click();
    await panel.getByRole('button', { name: 'Thumbs down (1)' }).nth(2).click();
    await expect.poll(() => statusChip().textContent(), { timeout: 60_000 }).toBe('completed');
    expect(await panel.count()).toBe(0);
    // The person is the reward: no held-out prompts to ask them about.
    expect(await page.locator('section[aria-labelledby="eval-title"]').count()).toBe(0);

    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((line) => line.reward)).toEqual([1, 0, 0.5, 1, 0.75, 0]);
    expect(await header().locator('p.hint').first().textContent()).toContain('rewards you×1');
    await page.getByLabel(/Rate completions myself/).uncheck();
  });

  it('overlays the curves of two runs and puts their settings side by side', async () => {
    const runs = page.locator('section[aria-labelledby="runs-title"]');
    const picks = runs.getByRole('checkbox', { name: /^Compare / });
    expect(await picks.count()).toBe(2); // the keyboard run and the rated run
    await picks.nth(0).check();
    await picks.nth(1).check();
    await runs.getByRole('button', { name: 'Compare 2 runs' }).click();
    const panel = page.locator('section[aria-labelledby="compare-title"]');
    await panel.waitFor();
    expect(await panel.locator('figcaption strong').allTextContents()).toEqual(['Mean reward', 'Library size']);
    expect(await panel.locator('canvas').count()).toBe(2);
    const rewards = panel.locator('tbody tr', { hasText: 'Rewards' });
    expect(await rewards.getAttribute('class')).toContain('differs');
    expect(await rewards.textContent()).toMatch(/you×1.*exact×1/s);
    await page.screenshot({ path: join(artifacts, 'walk-compare-1280.png'), fullPage: true });
    await panel.getByRole('button', { name: 'Close comparison' }).click();
    await header().waitFor();
  });

  it('says a run file is already in the list, in the words of the page', async () => {
    const [full] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Full run (JSON)' }).click()]);
    const text = await readFile((await full.path()) as string, 'utf8');
    await page.getByLabel('Import a run exported as JSON').setInputFiles({ name: 'run.json', mimeType: 'application/json', buffer: Buffer.from(text) });
    await expect.poll(() => setup().getByRole('alert').textContent()).toMatch(/Could not import run\.json: this run \(.*\) is already in your list\. Delete it there first/);
    expect(await setup().textContent()).not.toContain('replace: true');
  });

  it('keeps the dataset loaded before when a bad file follows it', async () => {
    await field('Task').selectOption('upload');
    const file = page.getByLabel('JSONL file');
    const good = ['Say hi.', 'Say yes.'].map((prompt, i) => JSON.stringify({ prompt, answer: ['hi', 'yes'][i] })).join('\n');
    await file.setInputFiles({ name: 'good.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(good) });
    await expect.poll(() => setup().textContent()).toContain('good.jsonl: 2 items');
    await file.setInputFiles({ name: 'bad.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from('{"prompt": "2+2=", "answer": "4"}\n{oops\n') });
    await expect.poll(() => setup().getByRole('alert').filter({ hasText: 'bad.jsonl' }).textContent()).toMatch(/bad\.jsonl line 2.*good\.jsonl \(2 items\) is still the dataset/s);
    expect(await setup().textContent()).toContain('good.jsonl: 2 items');
    expect(await page.getByRole('button', { name: 'Start run' }).getAttribute('aria-disabled')).toBeNull();
    await field('Task').selectOption('alphabetise');
  });

  it('an endpoint nobody listens on fails when it loads, and says so once', async () => {
    await page.getByLabel('Model', { exact: true }).selectOption({ label: 'OpenAI-compatible endpoint…' });
    await page.getByLabel('Base URL').fill(`http://127.0.0.1:${await closedPort()}/v1`);
    await page.getByLabel('Model name').fill('anything');
    await page.getByRole('button', { name: 'Start run' }).click();
    const model = page.locator('section[aria-labelledby="model-title"]');
    await expect.poll(() => model.getByRole('alert').textContent(), { timeout: 30_000 }).toMatch(/^Nothing answered at http:\/\/127\.0\.0\.1:\d+\/v1/);
    expect(await model.getByRole('status').textContent()).not.toContain('Ready');
    expect(await page.getByRole('alert').filter({ hasText: 'Nothing answered' }).count()).toBe(1);
    await page.getByLabel('Model', { exact: true }).selectOption({ label: 'webgrpo-tiny (bundled, offline)' });
  });

  it('logged no console errors but the refused endpoint', () => {
    expect(playground.errors.filter((e) => !/ERR_CONNECTION_REFUSED/.test(e))).toEqual([]);
  });
});

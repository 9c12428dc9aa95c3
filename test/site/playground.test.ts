/**
 * The playground as a newcomer meets it: the production build (what `npm start` serves) in real
 * headless Chromium. One epoch of a built-in task on the bundled tiny model (WebAssembly: the
 * harness's WebGPU is a CPU emulation, much slower), the curves and the library filling in, a
 * reload that finds everything still there, exports that parse, pause / resume / cancel, and a run
 * interrupted by a reload and resumed; a gradient run, a LoRA run, a router run and a lessons run
 * (the bundled model as its own critic). Every test opens its own browser context, so its own
 * IndexedDB, and waits on what the page shows, never on time; each one fails if its page logged a
 * console error. Screenshots of the main views at 1280 and 375 px go to test-artifacts/site/ (not
 * committed).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bundledModelPath, loadOnnxPolicy } from '../../lib/onnx.js';
import { serve } from '../../lib/server.js';
import { PLAYGROUND_ARMS } from '../../site/lib/arms.js';
import { artifacts, chooseTiny, startPlayground, type Playground } from './preview.js';
import { readZip, safetensorsHeader } from './zip-reader.js';

let playground: Playground;
let baseURL: string;
let context: BrowserContext;
let page: Page;
/** Console and page errors of the current test's context. */
let errors: string[] = [];

async function shoot(name: string): Promise<void> {
  for (const width of [1280, 375]) {
    await page.setViewportSize({ width, height: width === 1280 ? 900 : 800 });
    await page.evaluate(() => window.scrollTo(0, 0));
    // Charts resize on the next frame: wait for two.
    await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
    await page.screenshot({ path: join(artifacts, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1280, height: 900 });
}

/** A small, quick run: the tiny model writes 16 characters per completion. */
async function configure(p: Page, { prompts, epochs }: { prompts: number; epochs: number }): Promise<void> {
  await chooseTiny(p);
  await p.getByLabel('Device', { exact: true }).selectOption('wasm');
  await p.getByLabel('Task', { exact: true }).selectOption('alphabetise');
  await p.getByLabel('Prompts', { exact: true }).fill(String(prompts));
  await p.getByLabel('Group size', { exact: true }).fill('3');
  await p.getByLabel('Epochs', { exact: true }).fill(String(epochs));
  await p.getByLabel('Batch', { exact: true }).fill('2');
  await p.getByLabel('Max tokens', { exact: true }).fill('16');
}

const header = () => page.locator('section[aria-labelledby="run-title"]');
const statusChip = () => header().locator('h2 .chip');

beforeAll(async () => {
  playground = await startPlayground();
  baseURL = playground.baseURL;
}, 180_000);

afterAll(() => playground?.close());

// A context of its own per test: its own IndexedDB, so no test sees another's runs.
beforeEach(async () => {
  context = await playground.session.browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
  errors = [];
  context.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  context.on('weberror', (error) => errors.push(String(error.error())));
  page = await context.newPage();
  await page.goto(baseURL);
});

afterEach(async () => {
  await context?.close();
  expect(errors, 'console errors during this test').toEqual([]);
});

// Generous limits: the two cores are shared, and a loaded machine slows the model several times.
describe('the playground', { timeout: 240_000 }, () => {
  it('explains itself before any run, and loads no model runtime up front', async () => {
    const requests: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { name: 'No run yet' }).isVisible()).toBe(true);
    await expect.poll(() => page.locator('header .device').textContent()).toMatch(/WebGPU|WebAssembly/);
    // The advantage demo computes with the library: rewards 1, 0, .5, 1 give +0.78, −1.31, −0.26, +0.78.
    expect(await page.locator('.demo .adv').allTextContents()).toEqual(['+0.78', '−1.31', '−0.26', '+0.78']);
    expect(requests.filter((url) => /transformers|ort-wasm|onnx/i.test(url))).toEqual([]);
    await shoot('1-empty');
    page.removeAllListeners('request');
  });

  it('runs one epoch on the bundled model and shows groups, curves and the library', async () => {
    await chooseTiny(page, { exemplars: true });
    await configure(page, { prompts: 4, epochs: 1 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.locator('article.group').first().waitFor({ timeout: 60_000 });
    await shoot('2-live');
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');

    expect(await header().getByRole('status').textContent()).toContain('4 / 4 groups');
    // `npm start` serves the page cross-origin isolated and onnxruntime's own files: WebAssembly runs a thread per core.
    const cores = await page.evaluate(() => (self.crossOriginIsolated ? Math.min(16, navigator.hardwareConcurrency) : 0));
    expect(cores).toBeGreaterThan(0);
    expect(await page.locator('header .device').textContent()).toContain(cores === 1 ? '1 thread' : `${cores} threads`);
    expect(await page.locator('section[aria-labelledby="charts-title"] canvas').count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('section[aria-labelledby="charts-title"] tbody tr').count()).toBe(1);
    // Step 2 of 2 is in view: two groups of three completions, shaded token by token.
    expect(await page.locator('article.group').count()).toBe(2);
    expect(await page.locator('article.group .completions > li').count()).toBe(6);
    expect(await page.locator('article.group .tok').count()).toBeGreaterThan(20);
    // A random model still has reward spread (partial credit), so exemplars enter the library.
    const entries = page.locator('section[aria-labelledby="library-title"] li');
    expect(await entries.count()).toBeGreaterThan(0);
    const librarySize = await page.locator('section[aria-labelledby="charts-title"] tbody td').nth(3).textContent();
    expect(Number(librarySize)).toBe(await entries.count());

    // The step slider brings back step 1 and its library.
    await page.getByRole('slider', { name: 'Step in view' }).fill('1');
    await expect.poll(() => page.locator('#library-title').textContent()).toContain('after step 1');
    await page.getByRole('slider', { name: 'Step in view' }).fill('2');
    // Step 2's prompts carry step 1's exemplars: what training-free GRPO changes is the prompt.
    const seen = page.locator('article.group details.seen').first();
    await seen.locator('summary').click();
    expect(await seen.locator('summary').textContent()).toMatch(/with library entries E\d/);
    expect(await seen.locator('pre').first().textContent()).toContain('Sorted:');
    await shoot('3-done');

    // A reload finds the run, its curves and its library, and exports it.
    const libraryBefore = await page.locator('section[aria-labelledby="library-title"] li').allTextContents();
    await page.reload();
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('completed');
    expect(await page.locator('section[aria-labelledby="runs-title"] li').count()).toBe(1);
    expect(await page.locator('section[aria-labelledby="charts-title"] canvas').count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator('section[aria-labelledby="library-title"] li').allTextContents()).toEqual(libraryBefore);
    // Token pieces were kept with the run: shading needs no model after a reload.
    await expect.poll(() => page.locator('article.group .tok').count()).toBeGreaterThan(20);

    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    expect(jsonl.suggestedFilename()).toMatch(/^webgrpo-alphabetise-.*\.jsonl$/);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(4 * 3);
    for (const line of lines) {
      expect(line.prompt[0].role).toBe('user');
      expect(line.completion[0].role).toBe('assistant');
      expect(typeof line.reward).toBe('number');
      expect(Number.isFinite(line.advantage)).toBe(true);
    }

    const [full] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Full run (JSON)' }).click()]);
    const run = JSON.parse(await readFile((await full.path()) as string, 'utf8'));
    expect(run).toMatchObject({ format: 'webgrpo.run', run: { status: 'completed' } });
    expect(run.steps).toHaveLength(2);

    // Deleting takes a second click.
    const runs = page.locator('section[aria-labelledby="runs-title"] li');
    await page.getByRole('button', { name: 'Delete run' }).click();
    expect(await runs.count()).toBe(1);
    await page.getByRole('button', { name: 'Click again to delete' }).click();
    await expect.poll(() => runs.count()).toBe(0);
  });

  it('pauses, resumes, cancels, and resumes a cancelled run to the end, losing and repeating no group', async () => {
    await chooseTiny(page, { exemplars: true });
    await configure(page, { prompts: 4, epochs: 2 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('running');
    const progress = header().getByRole('status');
    const done = async () => Number(/^\s*(\d+) \/ 8 groups/.exec((await progress.textContent()) ?? '')?.[1] ?? 0);
    await page.getByRole('button', { name: 'Pause' }).click();
    const atPause = await done();
    expect(await statusChip().textContent()).toBe('paused');
    // While paused the loop takes no next event: the group being written may still land, no other
    // (the screenshots take their own time; nothing here waits on a clock).
    await shoot('4-paused');
    expect(await statusChip().textContent()).toBe('paused');
    expect(await done()).toBeLessThanOrEqual(atPause + 1);
    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await expect.poll(done, { timeout: 30_000 }).toBeGreaterThan(atPause + 1);
    await page.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('cancelled');
    await page.getByRole('button', { name: 'Resume run' }).click();
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');
    expect(await progress.textContent()).toContain('8 / 8 groups');
    // Every group once: 8 groups of 3 in the run's data, 4 prompts twice.
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as { group_id: string });
    expect(lines).toHaveLength(8 * 3);
    expect(new Set(lines.map((l) => l.group_id)).size).toBe(8);
  });

  it('resumes a run interrupted by a reload', async () => {
    await chooseTiny(page, { exemplars: true });
    await configure(page, { prompts: 8, epochs: 1 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => header().getByRole('status').textContent(), { timeout: 60_000 }).toMatch(/^\s*[12] \/ 8 groups/);
    await page.reload(); // six or more groups to go: the run is still going when the page goes
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('interrupted');
    expect(await header().getByRole('status').textContent()).toMatch(/^\s*[1-7] \/ 8 groups/);
    await shoot('4-interrupted');
    await configure(page, { prompts: 8, epochs: 1 }); // the device choice is not stored
    await page.getByRole('button', { name: 'Resume run' }).click();
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');
    expect(await header().getByRole('status').textContent()).toContain('8 / 8 groups');
    expect(await page.locator('section[aria-labelledby="runs-title"] li').count()).toBe(1);
  });

  it('trains on an uploaded JSONL dataset with a chosen reward, and names a bad line', async () => {
    await page.getByLabel('Device', { exact: true }).selectOption('wasm');
    await page.getByLabel('Task', { exact: true }).selectOption('upload');
    const file = page.getByLabel('JSONL file');
    await file.setInputFiles({ name: 'bad.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from('{"prompt": "2+2=", "answer": "4"}\n{oops\n') });
    await expect.poll(() => page.locator('section[aria-labelledby="setup-title"] [role="alert"]').textContent()).toContain('bad.jsonl line 2');
    expect(await page.getByRole('button', { name: 'Start run' }).getAttribute('aria-disabled')).toBe('true');
    const items = ['Say hi.', 'Say yes.'].map((prompt, i) => JSON.stringify({ prompt, answer: ['hi', 'yes'][i] })).join('\n');
    await file.setInputFiles({ name: 'mine.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(items) });
    await expect.poll(() => page.locator('section[aria-labelledby="setup-title"]').textContent()).toContain('mine.jsonl: 2 items');
    await page.getByLabel('Reward', { exact: true }).selectOption('similarity');
    await page.getByLabel('Prompts', { exact: true }).fill('2');
    await page.getByLabel('Epochs', { exact: true }).fill('1');
    await page.getByLabel('Max tokens', { exact: true }).fill('12');
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => header().locator('h2').textContent(), { timeout: 30_000 }).toContain('dataset');
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');
    expect(await header().locator('p.hint').first().textContent()).toContain('rewards similarity×1');
  });

  it('says plainly that a hub model needs the network when the browser is offline', async () => {
    // The page is ready (its lazily loaded store code in) before the network goes.
    await page.getByRole('heading', { name: 'No run yet' }).waitFor();
    await context.setOffline(true);
    try {
      await page.getByLabel('Model', { exact: true }).selectOption({ label: 'SmolLM2-135M-Instruct' });
      await page.getByRole('button', { name: /Load model|Reload model/ }).click();
      await expect.poll(() => page.locator('section[aria-labelledby="model-title"] [role="alert"]').textContent()).toMatch(/downloaded on first use, and this browser is offline.*bundled webgrpo-tiny model works offline/);
    } finally {
      await context.setOffline(false);
    }
  });

  it('trains through an OpenAI-compatible endpoint and never stores its key', async () => {
    const policy = await loadOnnxPolicy({ model: await bundledModelPath() });
    const api = await serve({ policy, port: 0, modelId: 'webgrpo-tiny', apiKey: 'sk-test-not-stored', corsOrigins: [new URL(baseURL).origin] });
    try {
      await page.getByLabel('Model', { exact: true }).selectOption({ label: 'OpenAI-compatible endpoint…' });
      await page.getByLabel('Base URL').fill(api.url);
      await page.getByLabel('Model name').fill('webgrpo-tiny');
      await page.getByLabel('API key').fill('sk-test-not-stored');
      await page.getByLabel('Prompts', { exact: true }).fill('2');
      await page.getByLabel('Epochs', { exact: true }).fill('1');
      await page.getByLabel('Max tokens', { exact: true }).fill('12');
      await page.getByRole('button', { name: 'Start run' }).click();
      await expect.poll(() => header().locator('p.hint').first().textContent(), { timeout: 30_000 }).toContain('webgrpo-tiny on http');
      await expect.poll(() => statusChip().textContent(), { timeout: 60_000 }).toBe('completed');
      const [full] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Full run (JSON)' }).click()]);
      const text = await readFile((await full.path()) as string, 'utf8');
      expect(JSON.parse(text).steps).toHaveLength(1);
      expect(text).not.toContain('sk-test-not-stored');
    } finally {
      await api.close();
      await policy.dispose();
    }
  });

  it('trains an adapter with gradient GRPO in the worker, survives a reload mid-run, and exports the adapter', async () => {
    await chooseTiny(page);
    await page.getByLabel('Device', { exact: true }).selectOption('wasm');
    await page.getByRole('radio', { name: /Gradient \(adapter\)/ }).check();
    // The method brings the settings it learns with on the bundled model (test/grad's).
    expect(await page.getByLabel('Task', { exact: true }).inputValue()).toBe('digits');
    expect(await page.getByLabel('Group size', { exact: true }).inputValue()).toBe('8');
    expect(await page.getByLabel('Updates per step', { exact: true }).inputValue()).toBe('2');
    await page.getByRole('button', { name: 'Start run' }).click();

    // Two steps in (of 12): the training curves and the adapter panel have data; the run goes on.
    const progress = header().getByRole('status');
    await expect.poll(() => progress.textContent(), { timeout: 90_000 }).toMatch(/^\s*([4-9]|1\d) \/ 24 groups/);
    const charts = page.locator('section[aria-labelledby="charts-title"]');
    const adapter = page.locator('section[aria-labelledby="adapter-title"]');
    expect(await charts.locator('figcaption strong').allTextContents()).toEqual(['Mean reward', 'Loss', 'KL to the base model', 'Entropy', 'Gradient norm', 'Sampler against trainer', 'Clipped tokens']);
    expect(await charts.locator('canvas').count()).toBe(7);
    // The trainer scores the tokens the sampler drew with the same parameters: near zero, and said so.
    expect(await charts.locator('figure p.hint').allTextContents()).toEqual([expect.stringMatching(/^On policy: sampler and trainer (give the same log-probs|agree to \d\.\de-\d+ nats per token at most)/)]);
    await expect.poll(() => adapter.locator('h3').textContent()).toMatch(/Adapter after step \d+/);
    expect(await adapter.locator('canvas').count()).toBe(1);
    await shoot('5-gradient-live');
    await page.reload();
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('interrupted');
    expect(await header().locator('h2').textContent()).toContain('digits · gradient');
    expect(await progress.textContent()).toMatch(/^\s*([1-9]|1\d|2[0-3]) \/ 24 groups/);

    // The device picker is back on Auto; resuming takes the device the run was started on, and
    // leaves the picker as the person set it.
    expect(await page.getByLabel('Device', { exact: true }).inputValue()).toBe('auto');
    await page.getByRole('button', { name: 'Resume run' }).click();
    await expect.poll(() => page.locator('section[aria-labelledby="model-title"]').textContent(), { timeout: 60_000 }).toContain('On WebAssembly for the resumed run');
    expect(await page.getByLabel('Device', { exact: true }).inputValue()).toBe('auto');
    await expect.poll(() => statusChip().textContent(), { timeout: 180_000 }).toBe('completed');
    expect(await progress.textContent()).toContain('24 / 24 groups');
    expect(await charts.locator('tbody tr').count()).toBe(3);
    expect(await adapter.locator('h3').textContent()).toBe('Adapter after step 12');
    expect(await adapter.locator('tbody tr').count()).toBe(2); // the two updates of step 12
    const normB = Number(await adapter.locator('dt:text-is("‖B‖") + dd').textContent());
    expect(normB).toBeGreaterThan(0);
    await shoot('6-gradient-done');

    // The held-out prompts, evaluated in the worker before the first step and after each epoch
    // (the reload cut the run between them): the trained adapter's digits reach them too.
    const heldOut = page.locator('section[aria-labelledby="eval-title"]');
    expect(await heldOut.locator('p.hint').first().textContent()).toMatch(/the trained one after epoch 3/);
    expect(await heldOut.locator('p.note').textContent()).toContain('no reference answers');
    const [before, after] = ((await heldOut.locator('dt:text-is("Mean reward") + dd').textContent()) ?? '').split('→').map(Number);
    expect(after).toBeGreaterThan(before + 0.2);

    // The groups: the mean reward of the last step is clearly above the first's.
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    expect(jsonl.suggestedFilename()).toMatch(/^webgrpo-digits-.*\.jsonl$/);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(24 * 8);
    const meanOfStep = (step: number) => {
      const rewards = lines.filter((l) => l.group_id.split(':')[1] === String(step)).map((l) => l.reward as number);
      expect(rewards).toHaveLength(16);
      return rewards.reduce((a, b) => a + b, 0) / rewards.length;
    };
    expect(meanOfStep(12), `step 1: ${meanOfStep(1)}`).toBeGreaterThan(meanOfStep(1) + 0.3);

    // The adapter file: the checkpoint of step 12, whose B is the one the panel measures.
    const [file] = await Promise.all([page.waitForEvent('download'), adapter.getByRole('button', { name: 'Download adapter (JSON)' }).click()]);
    expect(file.suggestedFilename()).toMatch(/^webgrpo-digits-.*-adapter-step12\.json$/);
    const saved = JSON.parse(await readFile((await file.path()) as string, 'utf8'));
    expect(saved).toMatchObject({ format: 'webgrpo.adapter', version: 1, target: 'lm_head', rank: 8, scale: 2, updates: 24 });
    const b = new Float32Array(new Uint8Array(Buffer.from(saved.b, 'base64')).buffer);
    expect(b).toHaveLength(saved.rank * saved.vocabSize);
    expect(Math.hypot(...b)).toBeCloseTo(normB, 3);
  });

  it('trains LoRA on every layer in the worker, sampling with A and B as graph inputs, and exports the adapter', async () => {
    await chooseTiny(page);
    await page.getByLabel('Device', { exact: true }).selectOption('wasm');
    await page.getByRole('radio', { name: /LoRA \(every layer\)/ }).check();
    expect(await page.getByLabel('Task', { exact: true }).inputValue()).toBe('digits');
    await page.getByLabel('Prompts', { exact: true }).fill('2');
    await page.getByLabel('Group size', { exact: true }).fill('4');
    await page.getByLabel('Epochs', { exact: true }).fill('1');
    await page.getByLabel('Batch', { exact: true }).fill('1');
    await page.getByLabel('Max tokens', { exact: true }).fill('8');
    await page.getByLabel('Rank', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => header().locator('h2').textContent(), { timeout: 60_000 }).toContain('digits · lora');
    await expect.poll(() => statusChip().textContent(), { timeout: 180_000 }).toBe('completed');
    const adapter = page.locator('section[aria-labelledby="adapter-title"]');
    expect(await adapter.locator('h3').textContent()).toBe('Adapter after step 2');
    expect(await adapter.textContent()).toContain('y = x W + s·(x Aᵀ) Bᵀ');
    const normB = Number(await adapter.locator('dt:text-is("‖B‖") + dd').textContent());
    expect(normB).toBeGreaterThan(0);
    const charts = page.locator('section[aria-labelledby="charts-title"]');
    expect(await charts.locator('figcaption strong').allTextContents()).toContain('Loss');
    await shoot('6b-lora-done');
    // The WebAssembly model trains on onnxruntime-web's WebAssembly kernels, and the panel says so.
    expect(await adapter.textContent()).toContain("trained on WebAssembly, onnxruntime's kernels");
    // The download is PEFT's folder in a zip, for PeftModel.from_pretrained.
    const [file] = await Promise.all([page.waitForEvent('download'), adapter.getByRole('button', { name: 'Download adapter (PEFT zip)' }).click()]);
    expect(file.suggestedFilename()).toMatch(/^webgrpo-digits-.*-adapter-step2-peft\.zip$/);
    const files = readZip(new Uint8Array(await readFile((await file.path()) as string)));
    expect([...files.keys()].sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    const peft = JSON.parse(new TextDecoder().decode(files.get('adapter_config.json')));
    expect(peft).toMatchObject({ peft_type: 'LORA', r: 2, lora_alpha: 4, base_model_name_or_path: 'webgrpo-tiny' });
    expect(peft.target_modules).toHaveLength(7);
    const names = Object.keys(safetensorsHeader(files.get('adapter_model.safetensors')!));
    // Four layers, seven projections, A and B each.
    expect(names).toHaveLength(4 * 7 * 2);
    for (const name of names) expect(name).toMatch(/^base_model\.model\.model\.layers\.[0-3]\.(self_attn\.[qkvo]|mlp\.(gate|up|down))_proj\.lora_[AB]\.weight$/);
  });

  it('trains LoRA on WebGPU when the model runs on WebGPU, and says so', async () => {
    await chooseTiny(page);
    // The harness's WebGPU is SwiftShader: one step of one small group.
    await page.getByLabel('Device', { exact: true }).selectOption('webgpu');
    await page.getByRole('radio', { name: /LoRA \(every layer\)/ }).check();
    await page.getByLabel('Prompts', { exact: true }).fill('1');
    await page.getByLabel('Group size', { exact: true }).fill('4');
    await page.getByLabel('Epochs', { exact: true }).fill('1');
    await page.getByLabel('Batch', { exact: true }).fill('1');
    await page.getByLabel('Max tokens', { exact: true }).fill('4');
    await page.getByLabel('Rank', { exact: true }).fill('2');
    await page.getByRole('button', { name: 'Start run' }).click();
    const adapter = page.locator('section[aria-labelledby="adapter-title"]');
    await expect.poll(() => adapter.locator('h3').textContent(), { timeout: 200_000 }).toBe('Adapter after step 1');
    await expect.poll(() => statusChip().textContent(), { timeout: 60_000 }).toBe('completed');
    expect(await adapter.textContent()).toContain('trained on WebGPU');
    expect(await header().textContent()).toContain('trained on WebGPU');
  });

  it('routes between prompt variants with the router method, and keeps the routing after a reload', async () => {
    await page.getByRole('radio', { name: /Router/ }).check();
    await configure(page, { prompts: 2, epochs: 2 });
    await page.getByLabel('Samples before routing', { exact: true }).fill('3');
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => header().locator('h2').textContent(), { timeout: 60_000 }).toContain('alphabetise · router');
    await expect.poll(() => statusChip().textContent(), { timeout: 120_000 }).toBe('completed');

    // The curves: mean reward, then one routing chart per query class the router has seen.
    const charts = page.locator('section[aria-labelledby="charts-title"]');
    const titles = await charts.locator('figcaption strong').allTextContents();
    expect(titles[0]).toBe('Mean reward');
    expect(titles.slice(1).length).toBeGreaterThan(0);
    for (const title of titles.slice(1)) expect(title).toMatch(/^Routing: \w+$/);
    expect(await charts.locator('canvas').count()).toBe(titles.length);
    expect(await charts.locator('tbody tr').count()).toBe(2);
    // Step 2 in view: two groups of three, each completion with its variant.
    expect(await page.locator('article.group .chip.arm').count()).toBe(6);
    const router = page.locator('section[aria-labelledby="router-title"]');
    expect(await router.locator('h3').textContent()).toBe('Router after step 2');
    const rows = await router.locator('tbody tr').allTextContents();
    expect(rows.length).toBeGreaterThan(0);
    await shoot('7-router');

    await page.reload();
    await expect.poll(() => statusChip().textContent(), { timeout: 30_000 }).toBe('completed');
    expect(await charts.locator('figcaption strong').allTextContents()).toEqual(titles);
    expect(await router.locator('tbody tr').allTextContents()).toEqual(rows);

    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Training data (JSONL)' }).click()]);
    const lines = (await readFile((await jsonl.path()) as string, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line));
    expect(lines).toHaveLength(2 * 2 * 3);
    for (const line of lines) expect(typeof line.reward).toBe('number');
    // Each line says which variant wrote it, and has an id of its own.
    const variants = new Set(PLAYGROUND_ARMS.map((a) => a.id));
    for (const line of lines) expect(variants.has(line.arm)).toBe(true);
    expect(new Set(lines.map((line) => line.completion_id)).size).toBe(lines.length);
  });

  it('runs the lessons mode on the bundled model: its critic writes gibberish lessons as valid operations, with no warning', async () => {
    await chooseTiny(page);
    const lessons = page.getByRole('radio', { name: /Training-free: lessons/ });
    expect(await lessons.isDisabled()).toBe(false);
    await lessons.check();
    await expect.poll(() => page.locator('section[aria-labelledby="setup-title"] .hint.warn').textContent()).toContain('its lessons are gibberish');
    await configure(page, { prompts: 2, epochs: 1 });
    await page.getByRole('button', { name: 'Start run' }).click();
    await expect.poll(() => header().locator('h2').textContent(), { timeout: 60_000 }).toContain('alphabetise · lessons');
    await expect.poll(() => statusChip().textContent(), { timeout: 180_000 }).toBe('completed');

    // Every critiqued group has lessons and one operation per lesson; nothing was skipped or repaired.
    const critiqued = page.locator('article.group').filter({ has: page.locator('h5', { hasText: 'Critique' }) });
    expect(await critiqued.count()).toBeGreaterThan(0);
    for (const group of await critiqued.all()) {
      const proposed = await group.locator('.critic').first().locator('ul > li').count();
      expect(proposed).toBeGreaterThan(0);
      expect(await group.locator('.critic', { hasText: 'Proposed library operations' }).locator('li').count()).toBe(proposed);
      expect(await group.locator('.critic details pre').first().textContent()).toMatch(/^\s*\{/); // the bare JSON the schema asks for
    }
    expect(await page.locator('article.group .warnings').count()).toBe(0);
    await shoot('8-lessons');
  });

});

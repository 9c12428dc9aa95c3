/**
 * Where the bytes go in the scale bench's tab, for any group: the same page and call as `scale-tab`
 * (a hub-shaped model loaded on WebAssembly, a group sampled and scored, the weights read, LoRA
 * steps), with the renderer's resident memory and onnxruntime-web's heap (its WebAssembly memory,
 * which never shrinks) read after each phase, and the renderer's peak polled every 200 ms. The
 * weights' copies do not depend on the group, so a small group shows them in minutes.
 *
 *   [COLLECT=1] tsx scripts/bench/_scale-tab-phases.ts <shape> <fp32|q4> <group> <new tokens> [steps]
 *
 * COLLECT=1 collects the page's garbage before each reading: what is left is what is held.
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../test/browser/launch.js';
import { callBench, isolatedServerConfig, openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import { hubShapeModel } from './_hub-shapes.js';
import { exposePhases, rendererRss, type Phase } from './scale-tab.js';

const PROMPT = 'Answer with digits only: what is 7 x 6?';

async function main(): Promise<void> {
  const [shape, dtype, groupArg, tokensArg, stepsArg] = process.argv.slice(2);
  if (dtype !== 'fp32' && dtype !== 'q4') throw new Error(`dtype must be fp32 or q4, got ${dtype}`);
  const { dir } = await hubShapeModel(shape, dtype);
  const modules = await realpath(fileURLToPath(new URL('../../node_modules', import.meta.url)));
  const config = { ...isolatedServerConfig, server: { ...isolatedServerConfig.server, fs: { allow: [...(isolatedServerConfig.server?.fs?.allow ?? []), modules] } } };
  const MB = (bytes: number) => Math.round(bytes / 1e6);
  await withBenchServer(async (base) => {
    const browser = await launchChromium();
    let peak = 0;
    const poll = setInterval(() => void rendererRss().then((rss) => (peak = Math.max(peak, rss)), () => undefined), 200);
    const t0 = Date.now();
    try {
      const page = await openReadyPage(browser, `${base}/scripts/bench/pages/scale.html`, READY_TIMEOUT_MS);
      page.setDefaultTimeout(0);
      const phases: Phase[] = [];
      await exposePhases(page, phases, () => peak, (rss) => (peak = Math.max(peak, rss)), process.env.COLLECT === '1');
      const result = await callBench<{ phase: string; error?: string; stepsMs?: number[] }>(page, 'step', `/${dir}`, dtype, PROMPT, Number(groupArg), Number(tokensArg), 2, Number(stepsArg ?? 1));
      for (const p of phases) console.log(JSON.stringify({ phase: p.phase, rssMB: MB(p.rss), peakMB: MB(p.peak), heapMB: MB(p.heap) }));
      console.log(JSON.stringify({ result: result.phase, ...(result.error ? { error: result.error } : {}), stepsMs: result.stepsMs, s: Math.round((Date.now() - t0) / 1000) }));
      console.log(JSON.stringify({ phase: 'end', peakMB: MB(peak) }));
    } finally {
      clearInterval(poll);
      await browser.close();
    }
  }, config);
}

await main();

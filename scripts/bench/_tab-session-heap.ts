/**
 * onnxruntime-web's WebAssembly heap after making the Qwen2.5-0.5B-shaped q4 model's session in a
 * fresh tab, by how the session is made: `buffer` (the file's bytes, as transformers.js hands them
 * over), `pieces` (the graph without its inline weights and each weight as external data, as
 * loadOnnxPolicy makes it in a page: session-from-views.ts), `nofold` (the bytes, constant folding
 * off: no transposed copy of the tied embedding), `noprepack` (the bytes, prepacking off). The heap
 * never shrinks, so each mode runs in a browser of its own.
 *
 *   tsx scripts/bench/_tab-session-heap.ts buffer pieces nofold noprepack
 */
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../../test/browser/launch.js';
import { callBench, isolatedServerConfig, openReadyPage, READY_TIMEOUT_MS, withBenchServer } from './_chromium.js';
import { hubShapeModel } from './_hub-shapes.js';
import { rendererRss } from './scale-tab.js';
const modules = await realpath(fileURLToPath(new URL('../../node_modules', import.meta.url)));
const config = { ...isolatedServerConfig, server: { ...isolatedServerConfig.server, fs: { allow: [...(isolatedServerConfig.server?.fs?.allow ?? []), modules] } } };
const { dir } = await hubShapeModel('qwen2.5-0.5b', 'q4');
await withBenchServer(async (base) => {
  for (const mode of process.argv.slice(2)) {
    const browser = await launchChromium();
    let peak = 0;
    const poll = setInterval(() => void rendererRss().then((rss) => (peak = Math.max(peak, rss)), () => undefined), 200);
    try {
      const page = await openReadyPage(browser, `${base}/scripts/bench/pages/session-heap.html`, READY_TIMEOUT_MS);
      page.setDefaultTimeout(0);
      page.on('console', (m) => { if (m.type() === 'error') console.log('console:', m.text().slice(0, 300)); });
      let rss = 0;
      await page.exposeFunction('benchMark', async () => { rss = await rendererRss(); });
      const r = await callBench<Record<string, number>>(page, 'heap', `/${dir}`, 'onnx/model_q4.onnx', mode);
      console.log(JSON.stringify({ mode, ...r, heapMB: Math.round(r.heap / 1e6), rssMB: Math.round(rss / 1e6), peakMB: Math.round(peak / 1e6) }));
    } catch (e) { console.log(mode, 'failed', String(e).slice(0, 400)); }
    finally { clearInterval(poll); await browser.close(); }
  }
}, config);

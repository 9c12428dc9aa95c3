/**
 * `npm run gpu-check:pack`: the folder `.gpu-check/` (gitignored) that a GPU machine with no
 * network runs the GPU check from, small enough to travel with the working tree (64 MiB in all):
 *
 *   run.sh                     unpacks into /tmp, brings the Vulkan loader if the machine has none, runs the check
 *   check.mjs.xz, page*.mjs    the check (scripts/gpu-check/main.ts), the page globals and module hooks, bundled by esbuild
 *   node.xz                    this Node binary (x86-64 Linux), so the machine needs none
 *   ort/                       onnxruntime-web's runtime: the WebAssembly build and the WebGPU (asyncify) build, .wasm xz-compressed
 *   webgpu/                    Dawn's node binding, the `webgpu` npm package's index.js and dist/linux-x64/dawn.node (xz)
 *   debs/                      libvulkan1 and the GL dispatch libraries, as the device README brings them
 *
 * The bundle takes transformers.js' web build (onnxruntime-web, not onnxruntime-node), told that it
 * is not in Node (else it looks for onnxruntime-node), and onnxruntime-web's WebGPU entry with its
 * runtime files outside the bundle, so its WebAssembly threads can start. The `webgpu` package is
 * fetched once with npm into build/gpu-check-cache/ and checked against its registry integrity; it
 * is not a dependency of the project (its postinstall script would run on every install).
 * The model is not packed: the check builds it on the machine.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const root = fileURLToPath(new URL('../..', import.meta.url));
const out = join(root, '.gpu-check');
const cache = join(root, 'build/gpu-check-cache');
const ortDist = join(root, 'node_modules/onnxruntime-web/dist');
/** Dawn's node binding as published; its integrity is the registry's (`npm view webgpu@0.6.2 dist.integrity`). */
const WEBGPU = { version: '0.6.2', integrity: 'sha512-3L4GfmqJLvYUIEWJngEQY+2HQiUlAFkg8+P8NDDj3Xx5hHHIFO/r8JW+ynfqBj7kHN4mbnwO74uB+lrRtLhp4Q==' };
/** What the device README unpacks for Vulkan on a machine without a loader. */
const DEBS = ['libvulkan1', 'libegl1', 'libglvnd0', 'libopengl0', 'libgl1', 'libglx0', 'libgles2'];
const TRAVEL_LIMIT = 64 * 2 ** 20;

const IS_NODE_ENV = 'var IS_NODE_ENV = IS_PROCESS_AVAILABLE && process?.release?.name === "node" && !IS_DENO_WEB_RUNTIME;';

/** transformers.js' web build, as a page loads it; in Node it would otherwise reach for onnxruntime-node, which its web build does not hold. */
const transformersWeb: Plugin = {
  name: 'transformers-web',
  setup(b) {
    const file = join(root, 'node_modules/@huggingface/transformers/dist/transformers.web.js');
    b.onResolve({ filter: /^@huggingface\/transformers$/ }, () => ({ path: file }));
    b.onLoad({ filter: /transformers\.web\.js$/ }, () => {
      const text = readFileSync(file, 'utf8');
      if (!text.includes(IS_NODE_ENV)) throw new Error(`${file} no longer holds "${IS_NODE_ENV}": check how this transformers.js version tells Node from a page.`);
      return { contents: text.replace(IS_NODE_ENV, 'var IS_NODE_ENV = false;'), loader: 'js' };
    });
  },
};

function xz(file: string): void {
  execFileSync('xz', ['-9', '-T2', '-f', file]);
}

function copy(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
}

function webgpuPackage(): string {
  const tgz = join(cache, `webgpu-${WEBGPU.version}.tgz`);
  if (!existsSync(tgz)) {
    mkdirSync(cache, { recursive: true });
    execFileSync('npm', ['pack', `webgpu@${WEBGPU.version}`, '--pack-destination', cache, '--silent'], { stdio: 'inherit' });
  }
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tgz)).digest('base64')}`;
  if (integrity !== WEBGPU.integrity) throw new Error(`${tgz} has integrity ${integrity}, not the registry's ${WEBGPU.integrity}: delete it and pack again.`);
  const unpacked = join(cache, `webgpu-${WEBGPU.version}`);
  if (!existsSync(join(unpacked, 'package/dist/linux-x64/dawn.node'))) {
    mkdirSync(unpacked, { recursive: true });
    execFileSync('tar', ['-xzf', tgz, '-C', unpacked, 'package/index.js', 'package/LICENSE.md', 'package/package.json', 'package/dist/linux-x64/dawn.node']);
  }
  return join(unpacked, 'package');
}

/** The README's loaders, downloaded once for amd64 (apt-get download needs no root); none when apt-get is not there. */
function vulkanDebs(): string[] {
  const dir = join(cache, 'debs');
  const have = () => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.deb')) : []);
  if (DEBS.every((name) => have().some((f) => f.startsWith(`${name}_`)))) return have().map((f) => join(dir, f));
  mkdirSync(join(cache, 'apt-lists/partial'), { recursive: true });
  mkdirSync(dir, { recursive: true });
  const apt = ['-oAPT::Architecture=amd64', '-oAPT::Architectures=amd64', `-oDir::State::Lists=${join(cache, 'apt-lists')}`];
  try {
    execFileSync('apt-get', [...apt, 'update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', [...apt, 'download', '-qq', ...DEBS], { cwd: dir, stdio: 'inherit' });
  } catch (error) {
    console.warn(`Could not download the Vulkan loader packages (${error instanceof Error ? error.message : String(error)}); the check will need the machine's own libvulkan.`);
  }
  return have().map((f) => join(dir, f));
}

const RUN_SH = `#!/bin/sh
# The GPU check of issue 41, from the folder npm run gpu-check:pack wrote. Run from the repository
# root (the model is built into build/models/hub-shape/ there); arguments go to the check
# (scripts/gpu-check/main.ts). Results go to $OUT, else build/gpu-check.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=\${GPU_CHECK_WORK:-/tmp/webgrpo-gpu-check}
rm -rf "$work" && mkdir -p "$work" && cp -R "$here"/. "$work"/
for f in $(find "$work" -name '*.xz'); do
  if command -v xz >/dev/null 2>&1; then xz -d "$f"; else python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' "$f" && rm "$f"; fi
done
chmod +x "$work/node"
# Vulkan for Dawn: the loader (as the device README brings it) and the driver's ICD.
if ! ldconfig -p | grep -q 'libvulkan\\.so\\.1' && [ "\${GPU_CHECK_LOADERS:-bring}" = bring ] && [ "$(id -u)" = 0 ]; then
  for f in "$here"/debs/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
  ldconfig
fi
nv=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "\${VK_DRIVER_FILES:-}\${VK_ICD_FILENAMES:-}" ] && [ -f "$nv" ]; then export VK_DRIVER_FILES="$nv"; fi
echo "gpu-check: node $("$work/node" --version), libvulkan: $(ldconfig -p | grep -c 'libvulkan\\.so\\.1' || true) in ldconfig, ICD: \${VK_DRIVER_FILES:-\${VK_ICD_FILENAMES:-loader default}}"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L || true
exec "$work/node" "$work/check.mjs" "$@"
`;

function sizes(dir: string): Array<[string, number]> {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((f): [string, number] => [relative(dir, f), statSync(f).size])
    .sort((a, b) => b[1] - a[1]);
}

/** What a device call sends besides the pack: the tracked files and the untracked ones git does not ignore. */
function treeBytes(): number {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root }).toString().split('\0').filter(Boolean);
  return files.reduce((n, f) => (existsSync(join(root, f)) ? n + statSync(join(root, f)).size : n), 0);
}

/** The check and the page globals, bundled (transformers.js' web build, onnxruntime-web's WebGPU entry). */
async function bundles(): Promise<void> {
  const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', logLevel: 'warning', legalComments: 'none', minifyWhitespace: true } as const;
  await build({
    ...common,
    entryPoints: [join(root, 'scripts/gpu-check/main.ts')],
    outfile: join(out, 'check.mjs'),
    conditions: ['onnxruntime-web-use-extern-wasm'],
    plugins: [transformersWeb],
    // CommonJS dependencies (protobufjs) call require(); an ES module bundle has none of its own.
    banner: { js: "import { createRequire as __gpuCheckRequire } from 'node:module'; const require = __gpuCheckRequire(import.meta.url);" },
  });
  await build({ ...common, entryPoints: [join(root, 'scripts/gpu-check/page-entry.ts')], outfile: join(out, 'page.mjs') });
  await build({ ...common, entryPoints: [join(root, 'scripts/gpu-check/page-modules.ts')], outfile: join(out, 'page-modules.mjs') });
  xz(join(out, 'check.mjs'));
}

/** `--bundles`: only the two bundles again, the rest of an earlier pack kept (after an edit of the check). */
async function main(): Promise<void> {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`The GPU machine is x86-64 Linux; this Node is ${process.platform}-${process.arch}, so its binary would not run there.`);
  if (process.argv.includes('--bundles') && existsSync(join(out, 'node.xz'))) {
    await bundles();
    writeFileSync(join(out, 'run.sh'), RUN_SH, { mode: 0o755 });
    return report();
  }
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  await bundles();
  copy(process.execPath, join(out, 'node'));
  xz(join(out, 'node'));
  for (const name of ['ort-wasm-simd-threaded', 'ort-wasm-simd-threaded.asyncify']) {
    copy(join(ortDist, `${name}.mjs`), join(out, 'ort', `${name}.mjs`));
    copy(join(ortDist, `${name}.wasm`), join(out, 'ort', `${name}.wasm`));
    xz(join(out, 'ort', `${name}.wasm`));
  }
  const webgpu = webgpuPackage();
  for (const file of ['index.js', 'LICENSE.md', 'package.json', 'dist/linux-x64/dawn.node']) copy(join(webgpu, file), join(out, 'webgpu', file));
  xz(join(out, 'webgpu/dist/linux-x64/dawn.node'));
  for (const deb of vulkanDebs()) copy(deb, join(out, 'debs', deb.split('/').pop()!));
  writeFileSync(join(out, 'run.sh'), RUN_SH, { mode: 0o755 });
  report();
}

function report(): void {
  const listing = sizes(out);
  const packBytes = listing.reduce((n, [, size]) => n + size, 0);
  const tree = treeBytes();
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  for (const [file, size] of listing) console.log(`${mib(size).padStart(10)}  .gpu-check/${file}`);
  console.log(`${mib(packBytes).padStart(10)}  .gpu-check/ in all; with the working tree that travels (${mib(tree)}): ${mib(packBytes + tree)} of ${mib(TRAVEL_LIMIT)}`);
  if (packBytes + tree > TRAVEL_LIMIT) throw new Error(`The pack and the working tree come to ${mib(packBytes + tree)}, over the ${mib(TRAVEL_LIMIT)} a device call carries.`);
}

await main();

/**
 * The published artefact as a user gets it, made without touching the repository: the files
 * `npm pack` reads are copied into a temporary folder (node_modules linked, for the build tools)
 * and packed there, so its `prepack` builds dist/ and strips the manifest in the copy. The
 * tarball is then installed, with transformers.js (the optional peer), into a fresh project,
 * from npm's cache.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const root = fileURLToPath(new URL('../..', import.meta.url));

/** The environment without the npm_* variables of an enclosing `npm test`, which would point npm at this repo. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ONNXRUNTIME_NODE_INSTALL: 'skip' };
  for (const [key, value] of Object.entries(process.env)) if (!/^npm_/i.test(key)) env[key] = value;
  return env;
}

/** What `npm pack` needs from the repository: the published files and what builds them. */
const PACK_INPUTS = ['package.json', 'README.md', 'docs', 'LICENSE', 'tsconfig.json', 'tsconfig.build.json', 'lib', 'scripts/pack-manifest.ts', 'public/models/webgrpo-tiny', 'public/models/webgrpo-skill', 'python/webgrpo_rewards', 'public/models/webgrpo-reader', 'public/models/webgrpo-sorter'];

export interface Packed {
  tarball: string;
  files: string[];
  /** The package.json inside the tarball. */
  manifest: Record<string, unknown>;
}

export async function packInto(dir: string): Promise<Packed> {
  const stage = join(dir, 'stage');
  for (const path of PACK_INPUTS) await cp(join(root, path), join(stage, path), { recursive: true });
  await symlink(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: stage, env: cleanEnv(), maxBuffer: 16 << 20 });
  const [{ filename, files }] = JSON.parse(stdout.slice(stdout.indexOf('['))) as { filename: string; files: { path: string }[] }[];
  const tarball = join(dir, filename);
  const manifest = JSON.parse((await run('tar', ['-xzOf', tarball, 'package/package.json'], { maxBuffer: 1 << 20 })).stdout) as Record<string, unknown>;
  return { tarball, files: files.map((f) => f.path), manifest };
}

/** A fresh ESM project with `packages` installed from npm's cache (the repository's versions). */
export async function installProject(dir: string, packages: string[]): Promise<{ stdout: string; stderr: string }> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  return run('npm', ['install', ...packages, '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, env: cleanEnv(), maxBuffer: 16 << 20 });
}

/** `name@version` as the repository pins it, for installing the same package into a consumer. */
export async function pinned(name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  return `${name}@${manifest.devDependencies[name]}`;
}

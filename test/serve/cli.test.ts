/** `webgrpo serve` as a process: options, startup line, and SIGTERM/SIGINT shutdown. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTrlPromptCompletion } from '../export/trl-format.js';
import { parseSse, post } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = join(root, 'node_modules/.bin/tsx');

interface Started {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** Starts the toy-backed CLI and resolves once it prints the URL it serves on. */
function start(args: string[]): Promise<Started> {
  const child = spawn(tsx, [join(root, 'test/fixtures/serve-toy.ts'), ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      stdout += d;
      const match = /at (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(stdout);
      if (match) resolve({ child, url: match[1], stderr: () => stderr, exit });
    });
    void exit.then((code) => reject(new Error(`serve exited with ${code} before listening:\n${stdout}\n${stderr}`)));
  });
}

function runToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(tsx, [join(root, 'test/fixtures/serve-toy.ts'), ...args], { cwd: root, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    // A command that should have refused to start but serves instead is stopped, not left behind.
    const timer = setTimeout(() => child.kill('SIGTERM'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-cli-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('webgrpo serve', () => {
  it('explains its options and refuses bad ones', async () => {
    const help = await runToExit(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--model <name\|dir\|id> +webgrpo-tiny or webgrpo-skill/);
    const missing = await runToExit(['--port', '0']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--model is required/);
    const port = await runToExit(['--model', 'toy', '--port', '99999']);
    expect(port.code).toBe(2);
    expect(port.stderr).toMatch(/--port must be 0..65535/);
    const unknown = await runToExit(['--model', 'toy', '--temperature', '3']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown option '--temperature'/);
  });

  it('refuses an empty API key, from the option or the environment, rather than serve without authentication', async () => {
    const [option, env] = await Promise.all([
      runToExit(['--model', 'toy', '--port', '0', '--api-key', '']),
      runToExit(['--model', 'toy', '--port', '0'], { WEBGRPO_API_KEY: '' }),
    ]);
    expect(option.code).toBe(2);
    expect(option.stderr).toMatch(/--api-key is empty/);
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/WEBGRPO_API_KEY is empty/);
    expect(option.stdout + env.stdout).not.toMatch(/http:\/\//);
  });

  it('bounds group memory with --max-group-bytes, and refuses a size it cannot read', async () => {
    const bad = await runToExit(['--model', 'toy', '--port', '0', '--max-group-bytes', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--max-group-bytes must be a size such as/);
    const server = await start(['--model', 'toy', '--port', '0', '--max-group-bytes', '3MiB']);
    try {
      const health = await (await fetch(server.url.replace(/\/v1$/, '/health'))).json();
      expect(health.groups.max_bytes).toBe(3 * 2 ** 20);
    } finally {
      server.child.kill('SIGTERM');
      await server.exit;
    }
  });

  it('refuses an unwritable feedback file before loading the model', async () => {
    const result = await runToExit(['--model', 'toy', '--port', '0', '--feedback-file', join(dir, 'missing', 'f.jsonl')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--feedback-file .* cannot be opened for appending \(ENOENT\)/);
    expect(result.stderr).not.toMatch(/loading/);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal}, finishes in-flight requests, flushes the feedback file and exits 0`, async () => {
      const feedbackFile = join(dir, `${signal}.jsonl`);
      const server = await start(['--model', 'fixtures/toy', '--port', '0', '--api-key', 'k', '--feedback-file', feedbackFile]);
      const auth = { authorization: 'Bearer k' };
      const asked = (await (await post(`${server.url}/chat/completions`, { model: 'toy', messages: [{ role: 'user', content: 'x' }], n: 2, max_tokens: 6 }, auth)).json()) as { id: string };
      expect((await post(`${server.url}/feedback`, { group_id: asked.id, rewards: [0, 1] }, auth)).status).toBe(200);

      const res = await post(`${server.url}/chat/completions`, { model: 'toy', messages: [{ role: 'user', content: 'long' }], max_tokens: 80, stream: true }, auth);
      const reader = res.body!.getReader();
      await reader.read();
      server.child.kill(signal);
      let text = '';
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += new TextDecoder().decode(chunk.value);
      expect(parseSse(text).at(-1)).toBe('[DONE]');
      expect(await server.exit).toBe(0);
      expect(server.stderr()).toMatch(new RegExp(`${signal}: finishing in-flight requests`));
      const { rows } = checkTrlPromptCompletion(await readFile(feedbackFile, 'utf8'));
      expect(rows.map((r) => [r.group_id, r.reward])).toEqual([
        [asked.id, 0],
        [asked.id, 1],
      ]);
    });
  }
});

#!/usr/bin/env node
/**
 * `npx webgrpo <command>`: each command lives in its own module, loaded only when asked for,
 * so `webgrpo --help` starts without loading a model runtime.
 */
const commands: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<number> }> }> = {
  train: { summary: 'GRPO on a task or dataset: --method lessons, exemplars, gradient or router (resumable)', load: () => import('./train.js') },
  export: { summary: 'a stored run as verl parquet, TRL datasets or a PEFT adapter folder', load: () => import('./export.js') },
  serve: { summary: 'serve a model over an OpenAI-compatible API with ask/tell feedback', load: () => import('./serve.js') },
};

function usage(): string {
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(8)} ${c.summary}`);
  return ['Usage: webgrpo <command> [options]', '', 'Commands:', ...lines, '', 'Run `webgrpo <command> --help` for its options.'].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    console.log(usage());
    return name ? 0 : 1;
  }
  const command = commands[name];
  if (!command) {
    console.error(`Unknown command "${name}".\n\n${usage()}`);
    return 2;
  }
  return (await command.load()).run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);

/**
 * The API reference (`npm run docs`, TypeDoc from typedoc.json) builds from the package's entries
 * without a warning: every type an exported signature names is exported or listed in
 * `intentionallyNotExported` (and nothing listed there is exported or unused), every `{@link}` and
 * every relative link of the guides resolves. Each entry of package.json's exports is a module of
 * the reference with its own comment, and every guide in docs/ is one of its documents; in the
 * entries listed in DOCUMENTED, and wherever an entry reaches the files of DOCUMENTED_SOURCES,
 * every function, class and constant has a doc comment of its own.
 * Converted and validated only: no HTML is written.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Application, Logger, LogLevel, ReflectionKind, TSConfigReader, TypeDocReader, type DeclarationReflection } from 'typedoc';
import { expect, it } from 'vitest';
import { root } from './blocks.js';

/**
 * The entries whose every runtime export (function, class, constant) has a doc comment; an entry
 * joins when its last one gets its comment.
 */
const DOCUMENTED = ['webgrpo', 'webgrpo/method', 'webgrpo/grad', 'webgrpo/onnx', 'webgrpo/idb', 'webgrpo/node', 'webgrpo/math', 'webgrpo/tasks', 'webgrpo/openai', 'webgrpo/server', 'webgrpo/parquet'];

/**
 * Source folders (and files) whose runtime exports carry a doc comment through whichever entry
 * reaches them, so the entries not yet in DOCUMENTED lose no ground there.
 */
const DOCUMENTED_SOURCES = ['lib/core/', 'lib/errors.ts', 'lib/experience/', 'lib/export/', 'lib/methods/', 'lib/run/', 'lib/serve/', 'lib/session/', 'lib/tool/'];

/** The file a reflection is declared in, relative to the project's root. */
function sourceOf(reflection: DeclarationReflection): string {
  return (reflection.sources ?? reflection.signatures?.[0]?.sources ?? [])[0]?.fileName ?? '';
}

/** Whether a function's signatures, or a class's or constant's declaration, carry a summary. */
function documented(reflection: DeclarationReflection): boolean {
  const comments = reflection.kind === ReflectionKind.Function ? (reflection.signatures ?? []).map((s) => s.comment) : [reflection.comment];
  return comments.some((comment) => comment?.summary.some((part) => part.text.trim()));
}

/** Keeps what TypeDoc warns about, so a failure says what it was. */
class Collected extends Logger {
  readonly messages: string[] = [];
  override log(message: string, level: LogLevel): void {
    if (level === LogLevel.Warn || level === LogLevel.Error) this.messages.push(message);
  }
}

it('TypeDoc converts and validates the entries, the README and the guides without a warning', async () => {
  // No git for the source links (no HTML is written here): a checkout without an `origin` remote converts the same.
  const app = await Application.bootstrapWithPlugins({ options: join(root, 'typedoc.json'), disableGit: true, sourceLinkTemplate: '{path}#L{line}' }, [new TypeDocReader(), new TSConfigReader()]);
  const logger = new Collected();
  app.logger = logger;
  const project = await app.convert();
  expect(project).toBeDefined();
  app.validate(project!);
  expect(logger.messages).toEqual([]);

  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  const entries = Object.keys(manifest.exports).filter((s) => s !== './package.json').map((s) => `webgrpo${s.slice(1)}`);
  const modules = project!.children ?? [];
  expect(modules.map((m) => m.name).sort()).toEqual(entries.sort());
  expect(modules.filter((m) => !m.comment?.summary.some((part) => part.text.trim())).map((m) => m.name)).toEqual([]);
  const guides = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => f.replace(/\.md$/, ''));
  expect((project!.documents ?? []).map((d) => d.name).sort()).toEqual(guides.sort());
  expect(project!.readme?.length).toBeGreaterThan(0);

  const runtime = ReflectionKind.Function | ReflectionKind.Class | ReflectionKind.Variable;
  const undocumented = modules
    .flatMap((m) => (m.children ?? []).map((c) => ({ m, c })))
    .filter(({ m, c }) => DOCUMENTED.includes(m.name) || DOCUMENTED_SOURCES.some((s) => sourceOf(c).startsWith(s)))
    .filter(({ c }) => c.kindOf(runtime) && !documented(c))
    .map(({ m, c }) => `${m.name}: ${c.name} (${sourceOf(c)})`);
  expect(undocumented).toEqual([]);
}, 120_000);

/**
 * One loop run in its own process that kills itself (SIGKILL) just before its k-th commit to disk:
 * every rename or hard link (how the file store puts a file in place), file removal and append
 * (the export). With k = 0 it runs to the end and prints how many commits it made.
 *
 *   node --import tsx child.ts <kind> <storeDir> <recording.json> <export.jsonl> <k>
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';

const [kind, storeDir, recordingPath, exportPath, killAt] = process.argv.slice(2);
const k = Number(killAt);
let commits = 0;
const fsp = createRequire(import.meta.url)('node:fs/promises') as Record<string, (...args: unknown[]) => Promise<unknown>>;
for (const name of ['rename', 'link', 'unlink', 'rm', 'appendFile']) {
  const original = fsp[name];
  fsp[name] = async (...args: unknown[]) => {
    if (++commits === k) process.kill(process.pid, 'SIGKILL');
    return original(...args);
  };
}
// The stores import these functions by name: make those bindings see the wrappers.
syncBuiltinESMExports();

const { openEpochExport, openFileStore } = await import('../../lib/node.js');
const { drive, EXPORT, readRecording } = await import('./runs.js');
const store = await openFileStore(storeDir);
const exported = kind === 'training-free' ? await openEpochExport(exportPath, EXPORT) : undefined;
const status = await drive(kind as 'training-free', 'start', store, { recording: await readRecording(recordingPath), ...(exported ? { onEpoch: exported.hook } : {}) });
await exported?.sink.flush();
await store.close();
process.stdout.write(`${JSON.stringify({ status, commits })}\n`);

/**
 * A training-free run with `--export-jsonl`'s export in its own process, killed (SIGKILL) inside the
 * epoch hook of epoch 1: after the epoch's last step is committed, before (or half-way through)
 * its lines are appended. Replays a recording on a file store.
 *
 *   node --import tsx epoch-export-child.ts <storeDir> <recording.json> <runId> <export.jsonl> <none|before-append|torn-line>
 */
import { appendFile, readFile } from 'node:fs/promises';
import { replayPolicy, toJsonl, trainingFreeGrpo } from '../../../lib/index.js';
import { openEpochExport, openFileStore } from '../../../lib/node.js';
import { standardShape } from '../../tfgrpo/helpers/fixture.js';

/** What `webgrpo train --export-jsonl` writes. */
export const EXPORT = { format: 'conversational', include: ['reward', 'advantage', 'groupId', 'completionId'] } as const;

const [dir, recordingPath, runId, exportPath, kill] = process.argv.slice(2);
const store = await openFileStore(dir);
const policy = replayPolicy(await readFile(recordingPath, 'utf8'));
const exported = await openEpochExport(exportPath, EXPORT);
const run = trainingFreeGrpo({
  ...standardShape(),
  policy,
  store,
  runId,
  onEpoch: async (epoch) => {
    if (epoch.epoch === 1 && kill === 'torn-line') {
      // The kill lands mid-write: two whole lines and half of the third reach the file.
      const text = toJsonl(epoch.groups, EXPORT).split('\n');
      await appendFile(exportPath, `${text[0]}\n${text[1]}\n${text[2].slice(0, 25)}`);
    }
    if (epoch.epoch === 1 && kill !== 'none') process.kill(process.pid, 'SIGKILL');
    await exported.hook(epoch);
  },
});
await run.result();
await exported.sink.flush();

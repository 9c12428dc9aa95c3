/**
 * A training-free run in its own process, for the kill-and-resume test: replays a recording on a
 * file store and prints every event as one JSON line, so the parent can kill it at a chosen point.
 *
 *   node --import tsx child-run.ts <start|resume> <storeDir> <recording.json> <runId> <delayMs>
 */
import { readFile } from 'node:fs/promises';
import { replayPolicy, resumeTrainingFreeGrpo, trainingFreeGrpo } from '../../../lib/index.js';
import { openFileStore } from '../../../lib/node.js';
import { standardShape } from './fixture.js';

const [command, dir, recordingPath, runId, delay] = process.argv.slice(2);
const store = await openFileStore(dir);
const policy = replayPolicy(await readFile(recordingPath, 'utf8'), { delayMs: Number(delay) });
const shape = standardShape();
const run =
  command === 'start'
    ? trainingFreeGrpo({ ...shape, policy, store, runId })
    : resumeTrainingFreeGrpo(runId, { policy, rewards: shape.rewards, store });
for await (const event of run) {
  const line: Record<string, unknown> = { type: event.type };
  if ('step' in event) line.step = event.step;
  if (event.type === 'item-end') line.reused = event.reused;
  if (event.type === 'run-end') Object.assign(line, { status: event.status, library: event.library });
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

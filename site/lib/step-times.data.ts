/** Written by `npm run bench -- playground-steps` (BENCHMARKS "playground-steps"): not to be edited by hand; step-times.ts holds them to their type. */
export const STEP_TIMES = [
  {
    "model": "sorter",
    "method": "gradient",
    "task": "sort-words",
    "groupSize": 8,
    "batchSize": 8,
    "maxNewTokens": 16,
    "secondsPerStep": 0.7,
    "startupSeconds": 1.3
  },
  {
    "model": "sorter",
    "method": "exemplars",
    "task": "sort-words",
    "groupSize": 4,
    "batchSize": 2,
    "maxNewTokens": 48,
    "secondsPerStep": 1.9,
    "startupSeconds": 1.2
  },
  {
    "model": "sorter",
    "method": "lessons",
    "task": "sort-words",
    "groupSize": 4,
    "batchSize": 2,
    "maxNewTokens": 48,
    "secondsPerStep": 2.9,
    "startupSeconds": 1.1
  },
  {
    "model": "sorter",
    "method": "router",
    "task": "sort-words",
    "groupSize": 8,
    "batchSize": 2,
    "maxNewTokens": 24,
    "secondsPerStep": 0.2,
    "startupSeconds": 0.9
  },
  {
    "model": "sorter",
    "method": "lora",
    "task": "sort-words",
    "groupSize": 8,
    "batchSize": 16,
    "maxNewTokens": 24,
    "secondsPerStep": 1.8,
    "startupSeconds": 2.1
  },
  {
    "model": "skill",
    "method": "lora",
    "task": "copy-format",
    "groupSize": 8,
    "batchSize": 8,
    "maxNewTokens": 16,
    "secondsPerStep": 0.7,
    "startupSeconds": 1.7
  },
  {
    "model": "skill",
    "method": "gradient",
    "task": "copy-format",
    "groupSize": 8,
    "batchSize": 8,
    "maxNewTokens": 16,
    "secondsPerStep": 0.6,
    "startupSeconds": 1.3
  },
  {
    "model": "skill",
    "method": "lora",
    "task": "sort-words",
    "groupSize": 8,
    "batchSize": 16,
    "maxNewTokens": 24,
    "secondsPerStep": 1.7,
    "startupSeconds": 1.9
  },
  {
    "model": "skill",
    "method": "exemplars",
    "task": "copy-format",
    "groupSize": 4,
    "batchSize": 2,
    "maxNewTokens": 48,
    "secondsPerStep": 0.6,
    "startupSeconds": 1.1
  },
  {
    "model": "skill",
    "method": "lessons",
    "task": "copy-format",
    "groupSize": 4,
    "batchSize": 2,
    "maxNewTokens": 48,
    "secondsPerStep": 3.5,
    "startupSeconds": 1
  },
  {
    "model": "skill",
    "method": "router",
    "task": "copy-format",
    "groupSize": 8,
    "batchSize": 2,
    "maxNewTokens": 24,
    "secondsPerStep": 0.2,
    "startupSeconds": 1.1
  },
  {
    "model": "reader",
    "method": "exemplars",
    "task": "named-format",
    "groupSize": 8,
    "batchSize": 4,
    "maxNewTokens": 24,
    "secondsPerStep": 0.3,
    "startupSeconds": 1.1
  },
  {
    "model": "reader",
    "method": "lessons",
    "task": "named-format",
    "groupSize": 8,
    "batchSize": 1,
    "maxNewTokens": 24,
    "secondsPerStep": 1.5,
    "startupSeconds": 1.2
  }
];

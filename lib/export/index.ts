export { jsonlLines, toJsonl, type ExportCompletion, type ExportGroup, type ExportSource, type JsonlColumn, type JsonlFormat, type ToJsonlOptions } from './jsonl.js';
export { itemResultGroup, runGroups } from './run.js';
export { downloadJsonl, jsonlBlob } from './download.js';
export { exportEveryEpoch, finishedEpochs, type EpochExport, type EpochExportOptions, type EpochHook, type JsonlSink } from './epoch.js';
export { renderPrompts, toPromptJsonl, type PromptJsonlOptions, type PromptRenderer } from './prompts.js';
export { toPreferenceJsonl } from './preferences.js';

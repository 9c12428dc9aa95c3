export { createGrpoTool, toDatasetItem, type GrpoTool, type GrpoToolOptions, type Frame, type FrameWriter, type FrameSource, type ExperienceRecord, type ToolLoopOptions } from './grpo-tool.js';

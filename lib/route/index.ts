export * from './router.js';
export { routerGrpo, resumeRouterGrpo, routingProbabilities, type RouterRun, type RouterResult } from './loop.js';
export { armPrompt } from './arm.js';
export { queryClassOf } from './item.js';
export { ROUTER_DEFAULTS, type RouterGrpoOptions, type RouterHandles } from './options.js';
export type { RouterEvent, RouterEventType } from './events.js';

export { routerGrpo, resumeRouterGrpo, routingProbabilities, type RouterRun, type RouterResult } from './method.js';
export { queryClassOf } from './item.js';
export { ROUTER_DEFAULTS, type RouterGrpoOptions, type RouterHandles } from './options.js';
export type { RouterEvent, RouterEventType, RouterEpochStats } from './events.js';

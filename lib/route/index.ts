export * from './router.js';
export { routerGrpo, resumeRouterGrpo, routingProbabilities, type RouterRun, type RouterResult } from '../methods/router/method.js';
export { armPrompt } from './arm.js';
export { queryClassOf } from '../methods/router/item.js';
export { ROUTER_DEFAULTS, type RouterGrpoOptions, type RouterHandles } from '../methods/router/options.js';
export type { RouterEvent, RouterEventType } from '../methods/router/events.js';

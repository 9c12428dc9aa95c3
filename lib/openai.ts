/**
 * `webgrpo/openai`: a `Policy` over any OpenAI-compatible endpoint, on `fetch` (browser and Node).
 *
 * @module webgrpo/openai
 */
export { N_PROBE_GROUPS, openAiPolicy, type OpenAiPolicyOptions } from './policy/openai.js';

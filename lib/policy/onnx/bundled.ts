/**
 * The bundled models (public/models/webgrpo-tiny and webgrpo-skill, shipped in the npm package).
 * In Node each is a folder next to the package's code; browsers load them from the site, where
 * `public/` is served at the root.
 */

/** Where a site built with Vite (`public/` at the root) serves the bundled model. */
export const BUNDLED_MODEL_URL_PATH = '/models/webgrpo-tiny/';

/**
 * The bundled skill model (public/models/webgrpo-skill): pretrained by webgrpo to a partial skill
 * at the skill tasks (add-subtract, sort-words, count-letter, copy-format), so GRPO has something
 * to improve. Its README is the model card.
 */
export const SKILL_MODEL_URL_PATH = '/models/webgrpo-skill/';


export { compileResponseFormat, ResponseGrammar, type GrammarOptions } from './format.js';
export { TokenMatcher } from './matcher.js';
export { tokenVocabulary, TokenVocabulary } from './vocabulary.js';
export { applyTokenMask, countAllowed, isAllowed, maskedLogSoftmax, maskedLogSumExp } from './mask.js';
export { byteLevelTokenBytes, sentencePieceTokenBytes } from './token-bytes.js';

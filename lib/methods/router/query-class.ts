/**
 * The query class a router learns per: an explicit `queryClass` wins; otherwise OpenJarvis's
 * rule (openjarvis `_derive_query_class`): code, then math, then short (< 50 characters),
 * long (> 500), else general. `hasCode` / `hasMath` may be given; when absent they are guessed
 * from the query text: a code fence or a line that looks like a definition or statement means
 * code, arithmetic between numbers or LaTeX means math.
 */
export interface RoutingContext {
  /** Use this class as is. */
  queryClass?: string;
  /** The user's query text. */
  query?: string;
  /** Length of the query in characters; default `query.length`. */
  queryLength?: number;
  hasCode?: boolean;
  hasMath?: boolean;
}

const CODE = /```|^\s*(def|class|function|import|from|const|let|var|public|#include)\b|[;{}]\s*$/m;
const MATH = /\d\s*[-+*/^=<>]\s*\d|\\(frac|sum|int|sqrt)\b|\$[^$\n]+\$/;

export function deriveQueryClass(context: RoutingContext | string): string {
  const ctx: RoutingContext = typeof context === 'string' ? { query: context } : context;
  if (ctx.queryClass) return ctx.queryClass;
  const query = ctx.query ?? '';
  if (ctx.hasCode ?? CODE.test(query)) return 'code';
  if (ctx.hasMath ?? MATH.test(query)) return 'math';
  const length = ctx.queryLength ?? query.length;
  if (length < 50) return 'short';
  if (length > 500) return 'long';
  return 'general';
}

/**
 * `compileResponseFormat`: an output format (a JSON Schema, any JSON object, or a regular
 * expression) compiled once into a grammar that hands out a matcher per decoded row.
 *
 *   const grammar = compileResponseFormat({ type: 'json_schema', schema });
 *   const vocabulary = tokenVocabulary(bytesPerToken, [eosId]);
 *   const row = grammar.matcher(vocabulary);
 *   // each step: mask = row.allowed(); sample among its bits; row.accept(tokenId)
 *
 * The grammar is independent of the tokenizer and may be kept per schema; its DFA grows lazily
 * as rows explore it, and masks are cached per (grammar, vocabulary) state.
 */
import { InvalidInputError } from '../../errors.js';
import { LazyDfa } from './dfa.js';
import { lowerChars } from './encode.js';
import { JsonBuilder } from './json-grammar.js';
import { SchemaCompiler } from './json-schema.js';
import { MaskTable, TokenMatcher } from './matcher.js';
import { Nfa, type Fragment } from './nfa.js';
import { regexChars } from './regex.js';
import type { TokenVocabulary } from './vocabulary.js';

/** A JSON Schema document (the subset `compileResponseFormat` documents), or `true` for any value. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

export type ResponseFormat =
  | { type: 'json_schema'; schema: JsonSchema }
  | { type: 'json_object' }
  /** The whole output matches `pattern` (see lib/policy/constrain/regex.ts for the subset). */
  | { type: 'regex'; pattern: string };

export interface GrammarOptions {
  /** Longest run of whitespace between JSON tokens. Default 4. */
  maxWhitespace?: number;
  /** Deepest nesting of free-form JSON values (`json_object`, a schema `{}`). Default 4. */
  maxDepth?: number;
  /** Most automaton states the format may compile to. Default 500,000. */
  maxStates?: number;
  /**
   * Most DFA states decoding may discover (about 1 KiB each) before it stops with an
   * `InvalidInputError`. Default 50,000.
   */
  maxDfaStates?: number;
}

export class ResponseGrammar {
  private readonly dfa: LazyDfa;
  private readonly tables = new WeakMap<TokenVocabulary, MaskTable>();
  /** States of the compiled byte automaton (before determinisation). */
  readonly automatonStates: number;

  constructor(
    readonly format: ResponseFormat,
    nfa: Nfa,
    frag: Fragment,
    maxDfaStates = DEFAULT_MAX_DFA_STATES,
  ) {
    this.dfa = new LazyDfa(nfa, frag, nfa.live(frag), maxDfaStates);
    this.automatonStates = nfa.size;
  }

  /** DFA states discovered so far (grows as rows decode). */
  get dfaStates(): number {
    return this.dfa.size;
  }

  /** A fresh matcher at the start of the output. */
  matcher(vocabulary: TokenVocabulary): TokenMatcher {
    let table = this.tables.get(vocabulary);
    if (!table) {
      table = new MaskTable(this.dfa, vocabulary);
      this.tables.set(vocabulary, table);
    }
    return new TokenMatcher(table);
  }
}

/** GrammarOptions.maxDfaStates's default: 50 MiB of transitions at most per grammar. */
const DEFAULT_MAX_DFA_STATES = 50_000;

export function compileResponseFormat(format: ResponseFormat, options: GrammarOptions = {}): ResponseGrammar {
  const { maxWhitespace = 4, maxDepth = 4, maxStates = 500_000, maxDfaStates = DEFAULT_MAX_DFA_STATES } = options;
  for (const [name, value] of Object.entries({ maxWhitespace, maxDepth, maxStates, maxDfaStates })) {
    if (!Number.isInteger(value) || value < 0) throw new InvalidInputError(name, `must be a non-negative integer, got ${value}.`);
  }
  if (typeof format !== 'object' || format === null) throw new InvalidInputError('responseFormat', 'must be an object with a type.');
  switch (format.type) {
    case 'json_schema': {
      if (!('schema' in format)) throw new InvalidInputError('responseFormat.schema', 'is missing.');
      const nfa = new Nfa(maxStates, 'responseFormat.schema');
      const json = new JsonBuilder(nfa, { maxWhitespace, maxDepth });
      return new ResponseGrammar(format, nfa, new SchemaCompiler(json, format.schema, 'responseFormat.schema').compile(), maxDfaStates);
    }
    case 'json_object': {
      const nfa = new Nfa(maxStates, 'responseFormat');
      const json = new JsonBuilder(nfa, { maxWhitespace, maxDepth });
      return new ResponseGrammar(format, nfa, json.map(() => json.anyValue(Math.max(maxDepth - 1, 0))), maxDfaStates);
    }
    case 'regex': {
      if (typeof format.pattern !== 'string') throw new InvalidInputError('responseFormat.pattern', 'must be a string.');
      const chars = regexChars(format.pattern, 'responseFormat.pattern', 'full', maxStates);
      const nfa = new Nfa(maxStates, 'responseFormat.pattern');
      return new ResponseGrammar(format, nfa, lowerChars(chars.nfa, chars.frag, nfa, 'raw'), maxDfaStates);
    }
    default:
      throw new InvalidInputError(
        'responseFormat.type',
        `must be "json_schema", "json_object" or "regex", got ${JSON.stringify((format as { type?: unknown }).type)}.`,
      );
  }
}

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
import { InvalidInputError } from '../errors.js';
import { LazyDfa } from './dfa.js';
import { encodedExtra, lowerChars } from './encode.js';
import { build, size, type Ir } from './ir.js';
import { JsonBuilder } from './json-grammar.js';
import { MAX_SCHEMA_DEPTH, SchemaCompiler } from './json-schema.js';
import { MaskTable, TokenMatcher } from './matcher.js';
import { Nfa, withCompileBudget, type Fragment } from './nfa.js';
import { parseRegex, regexChars, regexSize } from './regex.js';
import type { TokenVocabulary } from './vocabulary.js';
import type { ResponseFormat } from '../core/policy.js';

export interface GrammarOptions {
  /** Longest run of whitespace between JSON tokens. Default 4. */
  maxWhitespace?: number;
  /** Deepest nesting of free-form JSON values (`json_object`, a schema `{}`). Default 4. */
  maxDepth?: number;
  /**
   * Most automaton states the format may compile to. The size is known before anything is built,
   * so a larger format is refused at once (an `InvalidInputError` naming the limit). Default
   * 200,000 (a string of `maxLength` 10,000, or the critic's operations schema four times over).
   */
  maxStates?: number;
  /**
   * Most DFA states decoding may discover (about 1 KiB each) before it stops with an
   * `InvalidInputError`. Default 50,000.
   */
  maxDfaStates?: number;
  /**
   * Most automaton states the discovered DFA states may hold together (their sets, each state
   * about 12 bytes with its key) before decoding stops with an `InvalidInputError`. Default
   * 4,000,000: a counted repeat of thousands (`[\s\S]{4096}`) keeps thousands alive per state.
   */
  maxDfaSetEntries?: number;
  /**
   * Most milliseconds compiling may take on the caller's thread before it stops with an
   * `InvalidInputError` naming the budget (a server keeps its event loop answering with it).
   * Default Infinity.
   */
  maxCompileMs?: number;
}

/** A response format compiled to an automaton over bytes (`compileResponseFormat`): `matcher(vocabulary)` walks it token by token for the sampler's allowed-token masks. */
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
    maxDfaSetEntries = DEFAULT_MAX_DFA_SET_ENTRIES,
  ) {
    this.dfa = new LazyDfa(nfa, frag, nfa.live(frag), maxDfaStates, maxDfaSetEntries);
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

/** GrammarOptions.maxDfaSetEntries's default: about 50 MiB of sets and keys per grammar. */
const DEFAULT_MAX_DFA_SET_ENTRIES = 4_000_000;

/** GrammarOptions.maxStates's default. */
const DEFAULT_MAX_STATES = 200_000;

/**
 * Deepest nesting of arrays and objects anywhere in a schema document (enum and const values
 * included): everything that reads the document (this compiler, `JSON.stringify`) recurses per
 * level, and a request can nest thousands of levels in a few kilobytes.
 */
const MAX_DOCUMENT_DEPTH = 4 * MAX_SCHEMA_DEPTH;

/**
 * The grammars compiled last, by format text and the options that shape them: a server checks
 * each request's format when it arrives, and the policy's compile of the same format later (or
 * the next request's) reuses that work instead of pausing the event loop again. The budgets
 * (maxStates, maxCompileMs) only decide whether a format compiles, so a grammar compiled under
 * one budget serves any other it fits. A few entries: each holds up to maxStates NFA states and
 * the DFA decoding has grown.
 */
const recent = new Map<string, ResponseGrammar>();
const RECENT_GRAMMARS = 8;

/** Compiles an OpenAI `response_format` (json_object, json_schema, or a regex pattern) within the options' budgets, reusing a recent compile of the same format; a format past a budget is an `InvalidInputError` naming it. */
export function compileResponseFormat(format: ResponseFormat, options: GrammarOptions = {}): ResponseGrammar {
  const {
    maxWhitespace = 4,
    maxDepth = 4,
    maxStates = DEFAULT_MAX_STATES,
    maxDfaStates = DEFAULT_MAX_DFA_STATES,
    maxDfaSetEntries = DEFAULT_MAX_DFA_SET_ENTRIES,
    maxCompileMs = Infinity,
  } = options;
  for (const [name, value] of Object.entries({ maxWhitespace, maxDepth, maxStates, maxDfaStates, maxDfaSetEntries })) {
    if (!Number.isInteger(value) || value < 0) throw new InvalidInputError(name, `must be a non-negative integer, got ${value}.`);
  }
  if (!(maxCompileMs > 0)) throw new InvalidInputError('maxCompileMs', `must be a positive number of milliseconds, got ${maxCompileMs}.`);
  if (typeof format !== 'object' || format === null) throw new InvalidInputError('responseFormat', 'must be an object with a type.');
  const key = `${maxWhitespace},${maxDepth},${maxDfaStates},${maxDfaSetEntries}:${responseFormatKey(format)}`;
  const known = recent.get(key);
  if (known && known.automatonStates <= maxStates) {
    recent.delete(key);
    recent.set(key, known);
    return known;
  }
  const argument = format.type === 'regex' ? 'responseFormat.pattern' : format.type === 'json_schema' ? 'responseFormat.schema' : 'responseFormat';
  const grammar = withCompileBudget(maxCompileMs, argument, () => compileFormat(format, { maxWhitespace, maxDepth, maxStates, maxDfaStates, maxDfaSetEntries }));
  recent.set(key, grammar);
  if (recent.size > RECENT_GRAMMARS) recent.delete(recent.keys().next().value!);
  return grammar;
}

function compileFormat(format: ResponseFormat, options: Required<Omit<GrammarOptions, 'maxCompileMs'>>): ResponseGrammar {
  const { maxWhitespace, maxDepth, maxStates, maxDfaStates, maxDfaSetEntries } = options;
  const compiled = (argument: string, ir: Ir) => {
    const states = size(ir);
    if (states > maxStates) {
      throw new InvalidInputError(
        argument,
        `would compile to ${states === Infinity ? 'unboundedly many' : Math.ceil(states)} automaton states, more than the limit of ${maxStates} automaton states (maxStates); lower the repeat counts, maxLength / maxItems or the nesting.`,
      );
    }
    const nfa = new Nfa(maxStates, argument);
    return new ResponseGrammar(format, nfa, build(nfa, ir), maxDfaStates, maxDfaSetEntries);
  };
  switch (format.type) {
    case 'json_schema': {
      if (!('schema' in format)) throw new InvalidInputError('responseFormat.schema', 'is missing.');
      checkNesting(format.schema, 'responseFormat.schema');
      const json = new JsonBuilder({ maxWhitespace, maxDepth }, maxStates, 'responseFormat.schema');
      return compiled('responseFormat.schema', new SchemaCompiler(json, format.schema, 'responseFormat.schema', maxStates).compile());
    }
    case 'json_object': {
      const json = new JsonBuilder({ maxWhitespace, maxDepth }, maxStates, 'responseFormat');
      return compiled('responseFormat', json.map(json.anyValue(Math.max(maxDepth - 1, 0))));
    }
    case 'regex': {
      const argument = 'responseFormat.pattern';
      if (typeof format.pattern !== 'string') throw new InvalidInputError(argument, 'must be a string.');
      const node = parseRegex(format.pattern, argument);
      const { states, extra } = regexSize(node, 'full', (set) => encodedExtra(set, 'raw'));
      return compiled(argument, {
        kind: 'leaf',
        size: states + extra,
        build: (nfa) => {
          const chars = regexChars(node, argument, 'full', maxStates);
          return lowerChars(chars.nfa, chars.frag, nfa, 'raw');
        },
      });
    }
    default:
      throw new InvalidInputError(
        'responseFormat.type',
        `must be "json_schema", "json_object" or "regex", got ${JSON.stringify((format as { type?: unknown }).type)?.slice(0, 40)}.`,
      );
  }
}

/**
 * A string that identifies the format, for caching its grammar: its JSON text, once its nesting
 * is known to be shallow enough for `JSON.stringify` (which overflows the stack on a few thousand
 * levels) — a deeper schema is the InvalidInputError compiling it gives.
 */
export function responseFormatKey(format: ResponseFormat): string {
  if (format?.type === 'json_schema') checkNesting(format.schema, 'responseFormat.schema');
  return JSON.stringify(format);
}

/** Refuses a document nested deeper than MAX_DOCUMENT_DEPTH, without recursing itself. */
function checkNesting(document: unknown, argument: string): void {
  const stack: Array<[unknown, number, string]> = [[document, 0, '']];
  while (stack.length) {
    const [value, depth, path] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= MAX_DOCUMENT_DEPTH) {
      throw new InvalidInputError(argument, `nests arrays and objects more than ${MAX_DOCUMENT_DEPTH} deep (at ${path.slice(0, 120)}…); flatten the schema.`);
    }
    const entries: Array<[string, unknown]> = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    for (const [key, child] of entries) stack.push([child, depth + 1, depth < 12 ? `${path}/${key.slice(0, 20)}` : path]);
  }
}

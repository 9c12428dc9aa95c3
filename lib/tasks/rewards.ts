/**
 * General reward functions for your own datasets, comparing a completion with the item's `answer`.
 * Each returns null (cannot score) for an item without a usable answer.
 */
import type { RewardFunction } from '../core/reward.js';
import { lastNumber, parseJsonReply, similarity, squash } from './text.js';

const answerText = (answer: unknown): string | null =>
  typeof answer === 'string' ? answer : typeof answer === 'number' ? String(answer) : null;

/** Reward functions for your own datasets, by name: each compares a reply with the item's `answer`, null where the item has none it can use. */
export const builtinRewards: Record<string, RewardFunction> = {
  /** 1 when the reply equals the answer (whitespace collapsed, case ignored). */
  exact: {
    name: 'exact',
    score: ({ text, item }) => {
      const answer = answerText(item.answer);
      return answer === null ? null : squash(text).toLowerCase() === squash(answer).toLowerCase() ? 1 : 0;
    },
  },
  /** 1 when the reply contains the answer (case ignored). */
  contains: {
    name: 'contains',
    score: ({ text, item }) => {
      const answer = answerText(item.answer);
      return answer === null ? null : text.toLowerCase().includes(answer.toLowerCase()) ? 1 : 0;
    },
  },
  /** Edit-distance similarity to the answer, from 0 to 1: partial credit. */
  similarity: {
    name: 'similarity',
    score: ({ text, item }) => {
      const answer = answerText(item.answer);
      return answer === null ? null : similarity(squash(text), squash(answer));
    },
  },
  /** 1 when the last number in the reply equals the numeric answer. */
  number: {
    name: 'number',
    score: ({ text, item }) => {
      const answer = typeof item.answer === 'number' ? item.answer : Number(answerText(item.answer));
      return Number.isFinite(answer) ? (lastNumber(text) === answer ? 1 : 0) : null;
    },
  },
  /** 1 when the reply is JSON (bare or in one code fence). Needs no answer. */
  json: {
    name: 'json',
    score: ({ text }) => (parseJsonReply(text).ok ? 1 : 0),
  },
};

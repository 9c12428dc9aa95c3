/**
 * Several groups from any policy: one batched call where the policy decodes groups together
 * (`Policy.generateGroups`, the ONNX policy), else one group after another. Callers that sample
 * a step's items call this and never branch on the backend.
 */
import { InvalidInputError } from '../errors.js';
import type { GenerateGroupOptions, GroupResult, Policy } from '../core/policy.js';

/** Samples several groups from any policy: batched where the policy decodes groups together, else one after another, answers in request order. */
export async function generateGroups(policy: Policy, requests: GenerateGroupOptions[]): Promise<GroupResult[]> {
  if (!Array.isArray(requests)) throw new InvalidInputError('requests', 'must be an array of generateGroup options.');
  if (requests.length === 0) return [];
  if (policy.generateGroups) return policy.generateGroups(requests);
  const groups: GroupResult[] = [];
  for (const request of requests) groups.push(await policy.generateGroup(request));
  return groups;
}

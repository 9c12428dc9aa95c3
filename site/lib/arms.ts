/**
 * The router method's arms: prompt and sampling variants of the one loaded model, so the router has
 * something to choose between without a second model. Fixed here, so runs stay comparable.
 */
import type { RouterArm } from '../../lib/index.js';

export const PLAYGROUND_ARMS: readonly RouterArm[] = [
  { id: 'asked', label: 'As asked' },
  { id: 'terse', label: 'Terse', instruction: 'Answer in as few words as possible.' },
  { id: 'cool', label: 'Cool', temperatureScale: 0.5 },
  { id: 'hot', label: 'Hot', temperatureScale: 1.5 },
];

/** A colour per arm, by its place in the run's arms (charts, chips and tables agree). */
export const ARM_COLORS = ['#4f46e5', '#0f766e', '#b45309', '#be185d', '#7c3aed', '#0e7490'];

export function armColor(index: number): string {
  return ARM_COLORS[index % ARM_COLORS.length];
}

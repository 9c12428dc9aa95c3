import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Browser suites share one Vite server for test pages (see test/browser/global-setup.ts).
    globalSetup: ['test/browser/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: keep Chromium instances and ONNX sessions from starving each other.
    maxWorkers: 2,
  },
});

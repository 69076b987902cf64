import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/** The browser suite (Debian's Chromium driven by playwright-core); `npm run test:browser`, run by .ci/run. */
export default defineConfig({
  test: {
    include: ['test/browser/**/*.browser-spec.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 1,
  },
  plugins: [swc.vite({ module: { type: 'es6' } })],
});

import { readFileSync } from 'node:fs';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/** The browser suite (Debian's Chromium driven by playwright-core); `npm run test:browser`, run by .ci/run. */
/** The V8 flags `npm start` gives the server (package.json `config.nodeFlags`): the tests run as it runs. */
const { nodeFlags } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).config as { nodeFlags: string };

export default defineConfig({
  test: {
    include: ['test/browser/**/*.browser-spec.ts'],
    environment: 'node',
    globalSetup: ['test/support/browser-assets.setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    execArgv: nodeFlags.split(' ').filter(Boolean),
    maxWorkers: 1,
  },
  plugins: [swc.vite({ module: { type: 'es6' } })],
});

import { readFileSync } from 'node:fs';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/** The V8 flags `npm start` gives the server (package.json `config.nodeFlags`): the tests run as it runs. */
const { nodeFlags } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).config as { nodeFlags: string };

export default defineConfig({
  test: {
    include: ['src/**/*.spec.ts', 'test/**/*.e2e-spec.ts'],
    environment: 'node',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    execArgv: nodeFlags.split(' ').filter(Boolean),
    maxWorkers: 2,
  },
  // swc keeps the decorator metadata that Nest's dependency injection reads.
  plugins: [swc.vite({ module: { type: 'es6' } })],
});

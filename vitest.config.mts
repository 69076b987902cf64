import { readFileSync } from 'node:fs';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/** The V8 flags `npm start` gives the server (package.json `config.nodeFlags`): the tests run as it runs. */
const { nodeFlags } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8')).config as { nodeFlags: string };

/** Suites that load the machine most (a million rows read): they run after the others, with the machine to themselves. */
const HEAVY = ['test/e2e/revoked-list-scale.e2e-spec.ts'];
/** Suites that read what the whole process registered (every `Statement` made): a module graph of their own. */
const OWN_GRAPH = ['test/e2e/statement-count.e2e-spec.ts'];

export default defineConfig({
  test: {
    environment: 'node',
    globalSetup: ['test/support/browser-assets.setup.ts'],
    // Limits for a hang, not for speed: the suite stays green with a second one running beside it on this machine's
    // two cores, where a child process's start or a CLI call takes two to three times as long.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    execArgv: nodeFlags.split(' ').filter(Boolean),
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // One module graph per worker for all its files instead of one per file: loading Nest, TypeORM and the
        // application was most of the suite's time (isolation per file: 218 s; shared: 130 s).
        test: { name: 'suites', include: ['src/**/*.spec.ts', 'test/**/*.e2e-spec.ts'], exclude: [...HEAVY, ...OWN_GRAPH], isolate: false },
      },
      { extends: true, test: { name: 'own-graph', include: OWN_GRAPH } },
      { extends: true, test: { name: 'heavy', include: HEAVY, sequence: { groupOrder: 1 } } },
    ],
  },
  // swc keeps the decorator metadata that Nest's dependency injection reads.
  plugins: [swc.vite({ module: { type: 'es6' } })],
});

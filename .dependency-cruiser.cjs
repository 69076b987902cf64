/**
 * The layers of `src/` (README, Architecture), written once and checked by `npm run lint`:
 *
 * - `config`, `database` and `common` are what every feature builds on: they import no feature;
 * - `crypto`, `rate-limit` and `safe-fetch` are modules that features use and that know no feature: they import only
 *   `config`, `database`, `common` and each other (a route says what its budget counts by, `@RateLimit(bucket, clientOf)`);
 * - `auth` (the resource server's guard) never imports `oauth` (the authorization server);
 * - `keys` (signing keys) does not import `auth`, which verifies with them;
 * - `retention` (the pruning job) imports no feature: each feature contributes its prune steps to it;
 * - a feature imports another only through what sits at the top of that feature's folder (its module class,
 *   services, repositories, decorators, events, `index.ts`) or its `entities/`: the subfolders (`migrations/`,
 *   `commands/`, `dto/`, the authorization server's `endpoints/`, `grants/`, …) are the feature's own;
 * - no import cycles.
 *
 * A spec file may import across layers (a test of the whole configuration, say); the code it tests may not.
 */
const INFRASTRUCTURE = '^src/(config|database|common)/';
const SHARED = '^src/(crypto|rate-limit|safe-fetch)/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'infrastructure-imports-no-feature',
      comment: 'config, database and common import no feature module: a feature plugs into them, not the reverse.',
      severity: 'error',
      from: { path: INFRASTRUCTURE, pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/', pathNot: INFRASTRUCTURE },
    },
    {
      name: 'shared-modules-import-no-feature',
      comment:
        'crypto, rate-limit and safe-fetch serve features without knowing them: a feature hands them what they need (a route its client namer), not the reverse.',
      severity: 'error',
      from: { path: SHARED, pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/', pathNot: [INFRASTRUCTURE, SHARED] },
    },
    {
      name: 'auth-does-not-import-oauth',
      comment: 'The resource server (auth) works with any authorization server: it does not import oauth.',
      severity: 'error',
      from: { path: '^src/auth/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/oauth/' },
    },
    {
      name: 'keys-do-not-import-auth',
      comment: 'auth verifies tokens with the signing keys; keys do not depend on auth.',
      severity: 'error',
      from: { path: '^src/keys/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/auth/' },
    },
    {
      name: 'retention-imports-no-feature',
      comment:
        'The retention job finds the prune steps that features contribute (@ExpiringRows); it never names a feature, so adding one does not touch it.',
      severity: 'error',
      from: { path: '^src/retention/', pathNot: '\\.spec\\.ts$' },
      to: { path: '^src/', pathNot: [INFRASTRUCTURE, SHARED, '^src/retention/', '^src/metrics/'] },
    },
    {
      name: 'feature-through-its-surface',
      comment:
        "Another feature's subfolder (its migrations, commands, DTOs, inner parts): import what the feature offers at the top of its folder instead.",
      severity: 'error',
      from: { path: '^src/([^/]+)/', pathNot: ['\\.spec\\.ts$', INFRASTRUCTURE] },
      to: { path: '^src/[^/]+/(?!entities/)[^/]+/', pathNot: ['^src/$1/', INFRASTRUCTURE] },
    },
    {
      name: 'no-circular',
      comment: 'An import cycle: one of its arrows runs back up a layer.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing (a typo, or a package that is not installed).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};

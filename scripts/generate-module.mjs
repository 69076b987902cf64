// npm run generate:module -- <name> [--singular <name>] [--owned]
//
// Writes a CRUD feature module in the house style, like `nest g resource` does for a bare Nest app:
//   src/<name>/                 module, controller, service, entity, scopes, errors, DTOs
//   src/<name>/migrations/      its table, named with the real time (found at start by file name)
//   test/e2e/<name>.e2e-spec.ts an e2e suite that passes as generated, on SQLite and PostgreSQL
// and lists the module in src/features.ts, the one existing file it touches. `<name>` is the plural, kebab-case
// name of the collection (`products`, `stock-items`); the singular is derived (`product`) unless given. With
// `--owned`, each record belongs to the person who created it: lists show the caller's own (everyone's to an
// administrator), another person's record is 404 on every route, every repository call takes the caller's OwnerScope
// and the records are deleted with their person; without it, writes are for administrators.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderModule } from './templates/crud-module.mjs';

const USAGE = 'usage: npm run generate:module -- <plural-kebab-name> [--singular <kebab-name>] [--owned]   (e.g. products)';

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

const owned = process.argv.includes('--owned');
const args = process.argv.slice(2).filter((arg) => arg !== '--owned');
const plural = args[0] ?? '';
const singularFlag = args.indexOf('--singular');
const singular = singularFlag >= 0 ? (args[singularFlag + 1] ?? '') : singularOf(plural);
const KEBAB = /^[a-z][a-z0-9]*(-[a-z][a-z0-9]*)*$/;
if (!KEBAB.test(plural)) fail(`"${plural}" is not a kebab-case name\n${USAGE}`);
if (!KEBAB.test(singular) || singular === plural) fail(`cannot tell the singular of "${plural}"; pass --singular <name>\n${USAGE}`);

function singularOf(name) {
  if (/ies$/.test(name)) return name.replace(/ies$/, 'y');
  if (/(ss|sh|ch|x)es$/.test(name)) return name.replace(/es$/, '');
  return name.replace(/s$/, '');
}

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const featureDir = path.join(root, 'src', plural);
if (existsSync(featureDir)) fail(`src/${plural} exists already`);
/** The service's own folders, features or not: a generated module never takes one of their names. */
const SERVICE_FOLDERS = [
  'auth',
  'oauth',
  'keys',
  'common',
  'config',
  'database',
  'crypto',
  'rate-limit',
  'safe-fetch',
  'health',
  'logging',
  'demo',
];
if (SERVICE_FOLDERS.includes(plural)) fail(`"${plural}" is a folder of the service itself`);

const { files, names } = renderModule({ plural, singular, owned, timestamp: Date.now() });
for (const [relative, content] of Object.entries(files)) {
  const file = path.join(root, relative);
  if (existsSync(file)) fail(`${relative} exists already`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, content);
  process.stdout.write(`created ${relative}\n`);
}

// Register the module: one import and one entry in the feature list.
const featuresFile = path.join(root, 'src', 'features.ts');
const moduleClass = names.moduleClass;
const features = readFileSync(featuresFile, 'utf8');
const list = /export const FEATURE_MODULES = \[([^\]]*)\];/;
if (!list.test(features)) fail('src/features.ts has no FEATURE_MODULES list to add the module to');
const updated = features
  .replace(
    list,
    (_, entries) =>
      `export const FEATURE_MODULES = [${[
        ...entries
          .split(',')
          .map((e) => e.trim())
          .filter(Boolean),
        moduleClass,
      ].join(', ')}];`,
  )
  .replace(/^((?:import [^\n]*\n)*)/, `$1import { ${moduleClass} } from './${plural}/${plural}.module';\n`);
writeFileSync(featuresFile, updated);
process.stdout.write(`updated src/features.ts\n`);
// Lay the files out as the rest of the code base is (prettier), so the first lint run is green.
const prettier = spawnSync('npx', ['prettier', '--write', '--log-level', 'warn', ...Object.keys(files), 'src/features.ts'], {
  cwd: root,
  stdio: 'inherit',
});
if (prettier.status !== 0) fail('prettier could not format the generated files');
process.stdout.write(`\nnext: npx vitest run test/e2e/${plural}.e2e-spec.ts\n`);

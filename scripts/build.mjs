// Builds dist/ from src/ (tsc -p tsconfig.build.json, dist/ emptied first), copies the browser scripts the pages
// load from dependencies into dist/assets/, and stamps it with the time the build started. With --if-changed (what
// `npm start` runs) it builds only when a file the build reads is newer than the stamp, so a second start of
// unchanged sources starts at once. With --assets-only <dir> it copies the browser scripts into <dir>/assets/ alone
// (the tests' builds, and the sources as the tests run them).
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire, findPackageJSON } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, 'dist', '.build-stamp');

/**
 * The browser bundle of @simplewebauthn/browser, the file its package names for `<script>` use (`unpkg`), copied to
 * `<root>/assets/webauthn.js`, where the service reads it (the package exports no path to it).
 */
function copyBrowserAssets(root) {
  const manifestPath = findPackageJSON('@simplewebauthn/browser', import.meta.url);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const target = join(root, 'assets', 'webauthn.js');
  mkdirSync(dirname(target), { recursive: true });
  // Renamed into place: a service reading it meanwhile (a test run beside this one) never sees half a file.
  copyFileSync(join(dirname(manifestPath), manifest.unpkg), `${target}.${process.pid}`);
  renameSync(`${target}.${process.pid}`, target);
}

/** The newest modification time among what the build reads: src/, ormconfig.ts, the tsconfigs and the package files. */
function newestSource() {
  const files = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json', 'ormconfig.ts']
    .map((f) => join(ROOT, f))
    .filter((f) => existsSync(f));
  // Folders too: a file deleted or renamed changes no file's time, only its folder's.
  files.push(join(ROOT, 'src'));
  for (const entry of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile() || entry.isDirectory()) files.push(join(entry.parentPath, entry.name));
  }
  return Math.max(...files.map((f) => statSync(f).mtimeMs));
}

const assetsOnly = process.argv.indexOf('--assets-only');
if (assetsOnly !== -1) {
  copyBrowserAssets(resolve(ROOT, process.argv[assetsOnly + 1] ?? '.'));
  process.exit(0);
}
if (process.argv.includes('--if-changed') && existsSync(STAMP) && statSync(STAMP).mtimeMs >= newestSource()) {
  console.log('dist/ is as new as src/: not rebuilt (npm run build rebuilds it)');
  process.exit(0);
}
const started = Date.now();
rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
try {
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
} catch {
  process.exit(1);
}
copyBrowserAssets(join(ROOT, 'dist'));
// The stamp says which sources the build saw: those as of when it started.
writeFileSync(STAMP, '');
utimesSync(STAMP, started / 1000, started / 1000);

// Builds dist/ from src/ (tsc -p tsconfig.build.json, dist/ emptied first) and stamps it with the time the build
// started. With --if-changed (what `npm start` runs) it builds only when a file the build reads is newer than the
// stamp, so a second start of unchanged sources starts at once.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(ROOT, 'dist', '.build-stamp');

/** The newest modification time among what the build reads: src/, ormconfig.ts, the tsconfigs and package.json. */
function newestSource() {
  const files = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'ormconfig.ts'].map((f) => join(ROOT, f));
  for (const entry of readdirSync(join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files.push(join(entry.parentPath, entry.name));
  }
  return Math.max(...files.map((f) => statSync(f).mtimeMs));
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
// The stamp says which sources the build saw: those as of when it started.
writeFileSync(STAMP, '');
utimesSync(STAMP, started / 1000, started / 1000);

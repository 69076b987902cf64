import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Vitest's global set-up: the browser scripts a build copies from dependencies (scripts/build.mjs), copied into the
 * repository's `assets/` too, where the sources read them as the tests run them.
 */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs', '--assets-only', '.'], { cwd: resolve(__dirname, '../..'), stdio: 'inherit' });
}

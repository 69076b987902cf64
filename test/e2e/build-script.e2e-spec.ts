import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { findPackageJSON } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/service-process';

/**
 * `npm start` runs `node scripts/build.mjs --if-changed`: a second start of unchanged sources does not rebuild.
 * Tried on a one-file project of the same layout (src/, ormconfig.ts, the two tsconfigs), built by the project's
 * own TypeScript, so that the test costs a second instead of the service's build.
 */
describe('the build before npm start (scripts/build.mjs --if-changed)', () => {
  let dir: string;
  const built = () => join(dir, 'dist/src/main.js');
  const start = () => execFileSync(process.execPath, ['scripts/build.mjs', '--if-changed'], { cwd: dir, encoding: 'utf8' });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'build-script-'));
    mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'scripts'));
    cpSync(join(ROOT, 'scripts/build.mjs'), join(dir, 'scripts/build.mjs'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, 'package.json'), '{ "private": true }\n');
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { outDir: './dist', rootDir: '.', types: [], target: 'es2022', module: 'commonjs' } }),
    );
    writeFileSync(
      join(dir, 'tsconfig.build.json'),
      JSON.stringify({ extends: './tsconfig.json', include: ['src/**/*.ts', 'ormconfig.ts'] }),
    );
    writeFileSync(join(dir, 'ormconfig.ts'), 'export const orm = 1;\n');
    writeFileSync(join(dir, 'src/main.ts'), 'export const answer: number = 1;\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds the first time, not again while nothing changed, and again once a source is newer than the build', () => {
    expect(start()).toBe('');
    expect(existsSync(built())).toBe(true);
    const firstBuild = statSync(built()).mtimeMs;

    expect(start()).toBe('dist/ is as new as src/: not rebuilt (npm run build rebuilds it)\n');
    expect(statSync(built()).mtimeMs).toBe(firstBuild);

    // A source edited after the build (its time set ahead, so that the test does not depend on the clock's grain).
    writeFileSync(join(dir, 'src/main.ts'), 'export const answer: number = 2;\n');
    const later = (Date.now() + 5_000) / 1000;
    utimesSync(join(dir, 'src/main.ts'), later, later);
    expect(start()).toBe('');
    expect(statSync(built()).mtimeMs).toBeGreaterThan(firstBuild);
    expect(execFileSync(process.execPath, ['-p', `require(${JSON.stringify(built())}).answer`], { encoding: 'utf8' })).toBe('2\n');
  });

  it('rebuilds once a source is deleted (its folder changed, no file did), and the deleted one is gone from dist/', () => {
    // The sources as of a moment ago (the test above dated one ahead), and a new one.
    const before = (Date.now() - 1_000) / 1000;
    utimesSync(join(dir, 'src/main.ts'), before, before);
    writeFileSync(join(dir, 'src/extra.ts'), 'export const extra = 1;\n');
    expect(start()).toBe('');
    expect(existsSync(join(dir, 'dist/src/extra.js'))).toBe(true);
    expect(start()).toBe('dist/ is as new as src/: not rebuilt (npm run build rebuilds it)\n');

    rmSync(join(dir, 'src/extra.ts'));
    const later = (Date.now() + 20_000) / 1000;
    utimesSync(join(dir, 'src'), later, later);
    expect(start()).toBe('');
    expect(existsSync(join(dir, 'dist/src/extra.js'))).toBe(false);
  });

  it("copies the passkey pages' browser bundle, the file @simplewebauthn/browser names for <script> use", () => {
    const manifest = findPackageJSON('@simplewebauthn/browser', join(ROOT, 'package.json'))!;
    const bundle = readFileSync(join(dirname(manifest), (JSON.parse(readFileSync(manifest, 'utf8')) as { unpkg: string }).unpkg), 'utf8');
    expect(bundle).toContain('SimpleWebAuthnBrowser');
    rmSync(join(dir, 'dist/.build-stamp'));
    expect(start()).toBe('');
    expect(readFileSync(join(dir, 'dist/assets/webauthn.js'), 'utf8')).toBe(bundle);
    // Alone, into another build's root (the tests' own build, the sources as the tests run them).
    execFileSync(process.execPath, ['scripts/build.mjs', '--assets-only', 'elsewhere'], { cwd: dir });
    expect(readFileSync(join(dir, 'elsewhere/assets/webauthn.js'), 'utf8')).toBe(bundle);
  });

  it('rebuilds when dist/ has no stamp (a build by other means, or none)', () => {
    rmSync(join(dir, 'dist/.build-stamp'));
    expect(start()).toBe('');
    expect(existsSync(join(dir, 'dist/.build-stamp'))).toBe(true);
  });
});

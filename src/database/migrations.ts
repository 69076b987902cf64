import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';

type MigrationClass = new () => MigrationInterface;

/** `<epoch ms>-<name>.ts` (or `.js` once built), as `npm run migration:create -- <name>` writes them. */
const MIGRATION_FILE = /^\d{13}-[a-z0-9-]+\.(?:js|ts)$/;

/**
 * Every migration of the service, found by file name rather than listed by hand, so that two teams adding one
 * each do not edit the same line: the shared ones in `src/database/migrations/` and each feature's own in
 * `src/<feature>/migrations/`. TypeORM runs them in the order of the timestamps in their names.
 */
export async function discoverMigrations(sourceRoot = join(__dirname, '..')): Promise<MigrationClass[]> {
  const dirs = readdirSync(sourceRoot, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(sourceRoot, entry.name, 'migrations'))
    .filter((dir) => existsSync(dir));
  const found = new Set<MigrationClass>();
  for (const dir of dirs.sort()) {
    for (const file of readdirSync(dir)
      .filter((name) => MIGRATION_FILE.test(name))
      .sort()) {
      const exports = (await import(join(dir, file))) as Record<string, unknown>;
      for (const value of Object.values(exports)) {
        if (typeof value === 'function' && typeof (value.prototype as Partial<MigrationInterface>)?.up === 'function')
          found.add(value as MigrationClass);
      }
    }
  }
  if (found.size === 0) throw new Error(`no migrations found under ${sourceRoot}`);
  return [...found];
}

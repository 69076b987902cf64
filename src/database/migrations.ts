import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';

type MigrationClass = new () => MigrationInterface;

/** `<epoch ms>-<name>.ts` (or `.js` once built), as `npm run migration:create -- <name>` writes them. */
const MIGRATION_FILE = /^\d{13}-[a-z0-9-]+\.(?:js|ts)$/;

/**
 * Every migration in `src/database/migrations/`, found by file name rather than listed by hand, so that two teams
 * adding one each do not edit the same line. TypeORM runs them in the order of the timestamps in their names.
 */
export async function discoverMigrations(dir = join(__dirname, 'migrations')): Promise<MigrationClass[]> {
  const found = new Set<MigrationClass>();
  for (const file of readdirSync(dir)
    .filter((name) => MIGRATION_FILE.test(name))
    .sort()) {
    const exports = (await import(join(dir, file))) as Record<string, unknown>;
    for (const value of Object.values(exports)) {
      if (typeof value === 'function' && typeof (value.prototype as Partial<MigrationInterface>)?.up === 'function')
        found.add(value as MigrationClass);
    }
  }
  if (found.size === 0) throw new Error(`no migrations found in ${dir}`);
  return [...found];
}

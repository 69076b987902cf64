import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { MigrationInterface } from 'typeorm';

type MigrationClass = new () => MigrationInterface;

/** `<epoch ms>-<name>.ts` (or `.js` once built), as `npm run migration:create -- <name>` writes them. */
const MIGRATION_FILE = /^\d{13}-[a-z0-9-]+\.(?:js|ts)$/;

/** `src/` (or `dist/src/` once built): the folders whose `migrations/` are found. */
const SOURCE_ROOT = join(__dirname, '..');

/** The folders under `sourceRoot` that hold a `migrations/` folder (`database`, and features such as `users`), sorted. */
export function migrationFolders(sourceRoot = SOURCE_ROOT): string[] {
  return readdirSync(sourceRoot, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(sourceRoot, entry.name, 'migrations')))
    .map((entry) => entry.name)
    .sort();
}

/**
 * The feature folders whose migrations run but whose module (`src/widgets` → `WidgetsModule`, `src/oauth` →
 * `OAuthModule`: the folder's name without hyphens, in any case) is not among `moduleNames`: tables that no route
 * serves, and scopes missing from the metadata. `database` holds the shared migrations and belongs to no feature.
 */
export function unregisteredFeatures(moduleNames: Iterable<string>, sourceRoot = SOURCE_ROOT): string[] {
  const registered = new Set([...moduleNames].map((name) => name.toLowerCase()));
  return migrationFolders(sourceRoot).filter(
    (folder) => folder !== 'database' && !registered.has(`${folder.replace(/-/g, '')}module`.toLowerCase()),
  );
}

/**
 * Every migration of the service, found by file name rather than listed by hand, so that two teams adding one
 * each do not edit the same line: the shared ones in `src/database/migrations/` and each feature's own in
 * `src/<feature>/migrations/`. TypeORM runs them in the order of the timestamps in their names.
 */
export async function discoverMigrations(sourceRoot = SOURCE_ROOT): Promise<MigrationClass[]> {
  const dirs = migrationFolders(sourceRoot).map((folder) => join(sourceRoot, folder, 'migrations'));
  const found = new Set<MigrationClass>();
  for (const dir of dirs) {
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

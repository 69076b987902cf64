// npm run migration:create -- <name> [--module <feature>]: writes <epoch ms>-<name>.ts into
// src/<feature>/migrations/ (or src/database/migrations/ without --module), named with the real time so that
// migrations written by different teams order by when they were written. It is found at start by file name
// (src/database/migrations.ts); nothing else needs editing.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const KEBAB = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const name = process.argv[2] ?? '';
const moduleFlag = process.argv.indexOf('--module');
const feature = moduleFlag >= 0 ? (process.argv[moduleFlag + 1] ?? '') : 'database';
if (!KEBAB.test(name) || !KEBAB.test(feature)) {
  process.stderr.write('usage: npm run migration:create -- <name> [--module <feature>]   (kebab-case, e.g. add-products)\n');
  process.exit(1);
}
const timestamp = Date.now();
const className = name.replace(/(^|-)([a-z0-9])/g, (_, __, c) => c.toUpperCase()) + timestamp;
const featureDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', feature);
if (!existsSync(featureDir)) {
  process.stderr.write(`src/${feature} does not exist\n`);
  process.exit(1);
}
const dir = path.join(featureDir, 'migrations');
mkdirSync(dir, { recursive: true });
const file = path.join(dir, `${timestamp}-${name}.ts`);
if (existsSync(file)) {
  process.stderr.write(`${file} exists already\n`);
  process.exit(1);
}
writeFileSync(
  file,
  `import { type MigrationInterface, type QueryRunner } from 'typeorm';

/**
 * Runs on SQLite and PostgreSQL alike: prefer TypeORM's Table API (queryRunner.createTable, addColumn, createIndex)
 * to raw SQL, and index every column you filter or sort by, with \`id\` last. On SQLite, addColumn and changeColumn
 * rebuild the table: for grants, authorization_codes, refresh_tokens or audit_events, wrap that work in
 * withoutAuditedWriteViews (src/audit/audited-write-views.ts).
 */
export class ${className} implements MigrationInterface {
  async up(queryRunner: QueryRunner): Promise<void> {
    void queryRunner;
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    void queryRunner;
  }
}
`,
);
process.stdout.write(`${path.relative(process.cwd(), file)}\n`);

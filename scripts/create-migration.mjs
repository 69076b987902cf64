// npm run migration:create -- <name>: writes src/database/migrations/<epoch ms>-<name>.ts, named with the real
// time so that migrations written by different teams order by when they were written. It is found at start by
// file name (src/database/migrations.ts); nothing else needs editing.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const name = process.argv[2] ?? '';
if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(name)) {
  process.stderr.write('usage: npm run migration:create -- <name>   (kebab-case, e.g. add-products)\n');
  process.exit(1);
}
const timestamp = Date.now();
const className = name.replace(/(^|-)([a-z0-9])/g, (_, __, c) => c.toUpperCase()) + timestamp;
const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'database', 'migrations');
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
 * to raw SQL, and index every column you filter or sort by, with \`id\` last.
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

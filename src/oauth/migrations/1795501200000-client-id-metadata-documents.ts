import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** Every column that holds a client id (the key of `clients` and what references it), and the audit actor. */
const CLIENT_ID_COLUMNS = [
  ['clients', 'id'],
  ['grants', 'client_id'],
  ['authorization_codes', 'client_id'],
  ['refresh_tokens', 'client_id'],
  ['consents', 'client_id'],
  ['audit_events', 'client_id'],
] as const;

/**
 * Client ID metadata documents: a client id may be an https URL of up to 255 characters, so the columns holding
 * client ids grow from 64 to 255 characters and the audit actor (`client:<id>`) from 80 to 300; `clients` gets
 * `metadata_document`, the document a URL client was last seen with (JSON; NULL for every registered client).
 *
 * On PostgreSQL widening a varchar rewrites nothing (the referencing foreign keys stay valid). SQLite does not
 * enforce a declared varchar length, so there the columns stay as declared and no table is rebuilt (the audited
 * write views need no detour); only the new column is added.
 */
export class ClientIdMetadataDocuments1795501200000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') {
      for (const [table, column] of CLIENT_ID_COLUMNS) await q.query(`ALTER TABLE "${table}" ALTER COLUMN "${column}" TYPE varchar(255)`);
      await q.query(`ALTER TABLE "audit_events" ALTER COLUMN "actor" TYPE varchar(300)`);
    }
    await q.query(`ALTER TABLE "clients" ADD COLUMN "metadata_document" text`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The URL clients go with what they were granted (the foreign keys cascade); their audit events keep a
    // shortened id.
    await q.query(`DELETE FROM "clients" WHERE "metadata_document" IS NOT NULL`);
    await q.query(`ALTER TABLE "clients" DROP COLUMN "metadata_document"`);
    if (q.connection.options.type !== 'postgres') return;
    await q.query(`ALTER TABLE "audit_events" ALTER COLUMN "actor" TYPE varchar(80) USING left("actor", 80)`);
    for (const [table, column] of [...CLIENT_ID_COLUMNS].reverse()) {
      await q.query(`ALTER TABLE "${table}" ALTER COLUMN "${column}" TYPE varchar(64) USING left("${column}", 64)`);
    }
  }
}

import { type MigrationInterface, type QueryRunner } from 'typeorm';

/** SQLite: the audited-write views as the audit-events migration created them (what `down` puts back). */
const VIEWS_BEFORE = [
  `CREATE VIEW code_issue AS SELECT
     g.id AS grant_id, g.user_id, g.client_id, g.scope, g.resources, g.created_at, g.expires_at AS grant_expires_at,
     c.code_hash, c.redirect_uri, c.code_challenge, c.expires_at AS code_expires_at,
     a.id AS audit_id, a.actor, a.address, a.request_id, a.details
   FROM grants g, authorization_codes c, audit_events a WHERE 0`,
  `CREATE TRIGGER code_issue_insert INSTEAD OF INSERT ON code_issue BEGIN
     INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at)
     VALUES (NEW.grant_id, NEW.user_id, NEW.client_id, NEW.scope, NEW.resources, NEW.created_at, NEW.grant_expires_at, NULL);
     INSERT INTO authorization_codes
       (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at)
     VALUES (NEW.code_hash, NEW.grant_id, NEW.client_id, NEW.user_id, NEW.redirect_uri, NEW.scope, NEW.code_challenge,
       NEW.created_at, NEW.code_expires_at, NULL);
     INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)
     VALUES (NEW.audit_id, NEW.created_at, 'code.issued', NEW.actor, NEW.user_id, NEW.client_id, NEW.address,
       NEW.request_id, NEW.details);
   END`,
];

/**
 * SQLite: `code_issue` writing the login's time and session id on the grant and the request's nonce on the code.
 * (`refresh_token_issue` writes nothing this migration adds, and stays as it is.)
 */
export const VIEWS_AFTER = [
  `CREATE VIEW code_issue AS SELECT
     g.id AS grant_id, g.user_id, g.client_id, g.scope, g.resources, g.created_at, g.expires_at AS grant_expires_at,
     g.auth_time, g.sid,
     c.code_hash, c.redirect_uri, c.code_challenge, c.expires_at AS code_expires_at, c.nonce,
     a.id AS audit_id, a.actor, a.address, a.request_id, a.details
   FROM grants g, authorization_codes c, audit_events a WHERE 0`,
  `CREATE TRIGGER code_issue_insert INSTEAD OF INSERT ON code_issue BEGIN
     INSERT INTO grants (id, user_id, client_id, scope, resources, created_at, expires_at, revoked_at, auth_time, sid)
     VALUES (NEW.grant_id, NEW.user_id, NEW.client_id, NEW.scope, NEW.resources, NEW.created_at, NEW.grant_expires_at, NULL,
       NEW.auth_time, NEW.sid);
     INSERT INTO authorization_codes
       (code_hash, grant_id, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, consumed_at, nonce)
     VALUES (NEW.code_hash, NEW.grant_id, NEW.client_id, NEW.user_id, NEW.redirect_uri, NEW.scope, NEW.code_challenge,
       NEW.created_at, NEW.code_expires_at, NULL, NEW.nonce);
     INSERT INTO audit_events (id, at, type, actor, user_id, client_id, address, request_id, details)
     VALUES (NEW.audit_id, NEW.created_at, 'code.issued', NEW.actor, NEW.user_id, NEW.client_id, NEW.address,
       NEW.request_id, NEW.details);
   END`,
];

/**
 * OpenID Connect: what an ID token needs besides the grant. A login session gets the time of its login
 * (`auth_time`, epoch ms) and `sid`, a random id of the session to name in ID tokens (the session's own id is the
 * hash of its cookie and is never shown); each grant carries both from the session it was issued in (a refresh
 * repeats them), and each code the `nonce` of its authorization request. Sessions started before keep their
 * creation as their login time and get a random `sid`; grants from before have neither (they never had `openid`).
 *
 * Plain `ALTER TABLE ... ADD COLUMN` (no table rebuild on SQLite), so the audited-write views need no detour; on
 * SQLite `code_issue` is recreated to write the new columns.
 */
export class OpenIdConnect1795500700000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    const postgres = q.connection.options.type === 'postgres';
    await q.query(`ALTER TABLE "sessions" ADD COLUMN "auth_time" bigint`);
    await q.query(`ALTER TABLE "sessions" ADD COLUMN "sid" varchar(64)`);
    await q.query(
      `UPDATE "sessions" SET "auth_time" = "created_at", "sid" = ${postgres ? 'gen_random_uuid()::text' : 'lower(hex(randomblob(16)))'}`,
    );
    await q.query(`ALTER TABLE "grants" ADD COLUMN "auth_time" bigint`);
    await q.query(`ALTER TABLE "grants" ADD COLUMN "sid" varchar(64)`);
    await q.query(`ALTER TABLE "authorization_codes" ADD COLUMN "nonce" text`);
    if (postgres) return;
    await q.query(`DROP VIEW code_issue`);
    for (const statement of VIEWS_AFTER) await q.query(statement);
  }

  async down(q: QueryRunner): Promise<void> {
    const postgres = q.connection.options.type === 'postgres';
    if (!postgres) await q.query(`DROP VIEW code_issue`);
    await q.query(`ALTER TABLE "authorization_codes" DROP COLUMN "nonce"`);
    await q.query(`ALTER TABLE "grants" DROP COLUMN "sid"`);
    await q.query(`ALTER TABLE "grants" DROP COLUMN "auth_time"`);
    await q.query(`ALTER TABLE "sessions" DROP COLUMN "sid"`);
    await q.query(`ALTER TABLE "sessions" DROP COLUMN "auth_time"`);
    if (!postgres) for (const statement of VIEWS_BEFORE) await q.query(statement);
  }
}

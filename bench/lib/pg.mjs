// PostgreSQL helpers: a throw-away database per run (bench_<random>) and the one-statement user seed.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';

const ADMIN_URL = process.env.BENCH_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const created = new Set();
let closing = false;

function adminClient(database) {
  const url = new URL(ADMIN_URL);
  if (database) url.pathname = `/${database}`;
  return new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 10_000, statement_timeout: 600_000 });
}

/** The service's DATABASE_URL for a bench database. */
export function databaseUrl(name) {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

export async function createDatabase() {
  if (closing) throw new Error('the bench is shutting down');
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const client = adminClient();
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
    created.add(name);
  } finally {
    await client.end();
  }
  if (closing) {
    await dropDatabase(name);
    throw new Error('the bench is shutting down');
  }
  return name;
}

export async function dropDatabase(name) {
  const client = adminClient();
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    created.delete(name);
  } finally {
    await client.end();
  }
}

/** Drops every database this run created; no new one can be created afterwards. */
export async function dropAllDatabases() {
  closing = true;
  for (const name of [...created]) {
    try {
      await dropDatabase(name);
    } catch (error) {
      process.stderr.write(`bench: could not drop database ${name}: ${error.message}\n`);
    }
  }
}

/** Runs `fn(client)` with a connection to the bench database `name`. */
export async function withDatabase(name, fn) {
  const client = adminClient(name);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Adds users until the table holds `target` rows, in one INSERT ... SELECT FROM generate_series (the triggers keep
 * user_counts exact), then ANALYZE. Genders rotate female/male/other, ages spread over 0..150.
 * Returns `{ users, counted, inserted, insertSec, analyzeSec }`: the rows in users and in user_counts afterwards,
 * the rows inserted, and the wall time of the INSERT statement alone and of the ANALYZE.
 */
export async function seedUsersTo(name, target) {
  return withDatabase(name, async (client) => {
    const { rows } = await client.query('SELECT count(*)::int AS n FROM users');
    const have = rows[0].n;
    let insertSec = 0;
    if (have < target) {
      const t0 = performance.now();
      await client.query(
        `INSERT INTO users (id, email, email_normalized, password_hash, name, gender, age, role, created_at, updated_at)
         SELECT gen_random_uuid()::text,
                'bench.user' || i || '@example.com',
                'bench.user' || i || '@example.com',
                '$argon2id$v=19$m=19456,t=2,p=1$bench$not-a-real-hash',
                'Bench User ' || i,
                (ARRAY['female', 'male', 'other'])[1 + i % 3],
                (i * 7919) % 151,
                'user',
                1700000000000 + i * 1000,
                1700000000000 + i * 1000
         FROM generate_series($1::int, $2::int) AS i`,
        [have + 1, target],
      );
      insertSec = (performance.now() - t0) / 1000;
    }
    const t1 = performance.now();
    await client.query('ANALYZE users');
    const analyzeSec = (performance.now() - t1) / 1000;
    const check = await client.query(
      `SELECT (SELECT count(*)::int FROM users) AS users, (SELECT sum(total)::int FROM user_counts) AS counted`,
    );
    return { ...check.rows[0], inserted: Math.max(0, target - have), insertSec, analyzeSec };
  });
}

/** Node's codes for a server that cannot be reached at all. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/** `DATABASE_URL` as it may be shown: without its password. */
export function shownDatabaseUrl(raw: string | undefined): string {
  if (!raw || !URL.canParse(raw)) return raw ?? '';
  const url = new URL(raw);
  if (url.password) url.password = '';
  return url.href;
}

/**
 * The one line to stop the start with when the database refused or could not be reached (a PostgreSQL error with its
 * SQLSTATE, a network error, SQLite unable to open its file); undefined for any other error.
 */
export function databaseFailure(error: unknown, databaseUrl: string | undefined): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, severity } = error as Error & { code?: unknown; severity?: unknown };
  const byServer = typeof severity === 'string' && typeof code === 'string';
  const unreachable = typeof code === 'string' && UNREACHABLE.has(code);
  const sqlite = typeof code === 'string' && code.startsWith('SQLITE_CANTOPEN');
  if (!byServer && !unreachable && !sqlite) return undefined;
  const what = byServer ? 'refused the connection' : 'could not be reached';
  return `the database at DATABASE_URL ${shownDatabaseUrl(databaseUrl)} ${what}: ${error.message}`;
}

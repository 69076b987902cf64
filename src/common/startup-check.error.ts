/** A start-up check that failed (a route without an access rule, a feature left out): its message says it all, in one line. */
export class StartupCheckError extends Error {
  override name = 'StartupCheckError';
}

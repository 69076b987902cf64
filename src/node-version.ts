/**
 * The oldest Node.js this service runs on, as package.json's `engines` says: better-sqlite3 13 and argon2 need it,
 * and on an older one they crash (a bare segmentation fault) instead of saying why.
 */
export const NODE_REQUIRED = '22.15';

/** Why this Node.js cannot run the service, in one line, or undefined when it can. */
export function nodeVersionProblem(found: string): string | undefined {
  const [major, minor] = found.split('.').map(Number);
  const [needMajor, needMinor] = NODE_REQUIRED.split('.').map(Number);
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return `needs Node.js ${NODE_REQUIRED} or later, found ${found}`;
}

// Imported first by the entry points: the check runs before any native module loads.
const problem = nodeVersionProblem(process.versions.node);
if (problem) {
  process.stderr.write(`failed to start: ${problem}\n`);
  process.exit(1);
}

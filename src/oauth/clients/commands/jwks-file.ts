import { readFileSync } from 'node:fs';
import { CommandInputError } from '../../../common/command-line';

/** The JWK Set in the file `--jwks-file` names (checked by the clients service); an unreadable or non-JSON file is refused. */
export function readJwksFile(path: string | undefined): unknown {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    throw new CommandInputError(`--jwks-file "${path}" cannot be read`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new CommandInputError(`--jwks-file "${path}" is not JSON`);
  }
}

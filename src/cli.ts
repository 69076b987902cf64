import './node-version';
import './compile-cache';
import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { CliModule } from './cli.module';
import { CommandInputError } from './common/command-line';
import { DomainError } from './common/domain-error';
import { ConfigError, validateConfiguration } from './config/env';
import { InvalidClientInputError } from './oauth/clients/client-metadata';

/** Refusals whose message is the whole story; anything else is printed with its stack. */
function isRefusal(error: unknown): error is Error {
  return (
    error instanceof CommandInputError ||
    error instanceof ConfigError ||
    error instanceof DomainError ||
    error instanceof InvalidClientInputError
  );
}

function fail(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`error: ${isRefusal(error) ? message : ((error as Error)?.stack ?? message)}\n`);
  process.exitCode = 1;
}

/**
 * `node dist/src/cli.js <command> [options]`: each command prints one JSON object on stdout; any failure prints
 * one `error: ...` line on stderr and exits 1. Unknown commands and options are refused by commander itself.
 */
async function main(): Promise<void> {
  validateConfiguration(process.env);
  await CommandFactory.run(CliModule, { logger: ['error', 'warn'], cliName: 'cli', serviceErrorHandler: fail });
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    fail(error);
    process.exit(1);
  },
);

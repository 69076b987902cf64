import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { validate } from 'class-validator';

/** A command's input was refused; the CLI prints the message as one `error: ...` line and exits 1. */
export class CommandInputError extends Error {
  override name = 'CommandInputError';
}

/** Prints a command's result the way every command does: one JSON object on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Turns command options into a DTO and checks it with the same rules as the HTTP API. */
export async function validatedInput<T extends object>(type: ClassConstructor<T>, options: Record<string, unknown>): Promise<T> {
  const input = plainToInstance(type, options);
  const errors = await validate(input, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length) {
    throw new CommandInputError(
      errors.flatMap((e) => Object.values(e.constraints ?? { [e.property]: `${e.property} is invalid` })).join('; '),
    );
  }
  return input;
}

/** Commander's option parser for flags that may be given several times. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { ClientsService, InvalidClientInputError } from './auth/clients.service';
import { SigningKeysService } from './auth/signing-keys.service';
import { CliModule } from './cli.module';
import { AppConfig, ConfigError } from './config/app-config';
import { DomainError } from './common/domain-error';
import { CreateUserDto } from './users/dto/create-user.dto';
import { UsersService } from './users/users.service';

class UsageError extends Error {}

const USAGE = `usage: npm run --silent cli -- <command> [options]
  user:create   --email E --password P --name N --gender female|male|other --age A [--role user|admin]
  client:create --name N --redirect-uri URI [--redirect-uri URI ...] [--public] [--trusted] [--scope "a b"]
  keys:rotate`;

type Run = (app: Awaited<ReturnType<typeof NestFactory.createApplicationContext>>, args: string[]) => Promise<unknown>;

const commands: Record<string, Run> = {
  async 'user:create'(app, args) {
    const { values } = parseArgs({
      args,
      strict: true,
      options: {
        email: { type: 'string' },
        password: { type: 'string' },
        name: { type: 'string' },
        gender: { type: 'string' },
        age: { type: 'string' },
        role: { type: 'string' },
      },
    });
    const dto = plainToInstance(CreateUserDto, {
      ...values,
      age: values.age !== undefined && /^\d+$/.test(values.age) ? Number(values.age) : values.age,
    });
    const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
    if (errors.length) {
      throw new UsageError(errors.flatMap((e) => Object.values(e.constraints ?? { [e.property]: `${e.property} is invalid` })).join('; '));
    }
    return app.get(UsersService).create(dto);
  },
  async 'client:create'(app, args) {
    const { values } = parseArgs({
      args,
      strict: true,
      options: {
        name: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        public: { type: 'boolean' },
        trusted: { type: 'boolean' },
        scope: { type: 'string' },
      },
    });
    return app.get(ClientsService).create({
      name: values.name ?? '',
      redirectUris: values['redirect-uri'] ?? [],
      isPublic: values.public,
      trusted: values.trusted,
      scope: values.scope,
    });
  },
  async 'keys:rotate'(app, args) {
    parseArgs({ args, strict: true, options: {} });
    return { kid: await app.get(SigningKeysService).rotate() };
  },
};

async function main(): Promise<number> {
  const [command, ...args] = process.argv.slice(2);
  const run = command ? commands[command] : undefined;
  if (!run) {
    process.stderr.write(`${command ? `unknown command "${command}"\n` : ''}${USAGE}\n`);
    return 2;
  }
  AppConfig.fromEnv(process.env);
  const app = await NestFactory.createApplicationContext(CliModule, { logger: ['error', 'warn'] });
  try {
    const result = await run(app, args);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } finally {
    await app.close();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    const known = error instanceof UsageError || error instanceof ConfigError || error instanceof DomainError || error instanceof InvalidClientInputError;
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(known || (error as { code?: string })?.code?.startsWith('ERR_PARSE_ARGS') ? `error: ${message}\n` : `error: ${(error as Error)?.stack ?? message}\n`);
    process.exit(1);
  },
);

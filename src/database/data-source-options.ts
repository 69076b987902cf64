import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { discoverMigrations } from './migrations';
import { SnakeNamingStrategy } from './snake-naming.strategy';

/**
 * The one source of TypeORM options, used by the application and by the TypeORM CLI (`ormconfig.ts`).
 * Entities are registered by each feature module (`TypeOrmModule.forFeature`); the schema comes only from migrations.
 */
export async function dataSourceOptions(config: Pick<AppConfig, 'database'>): Promise<DataSourceOptions> {
  const common = {
    migrations: await discoverMigrations(),
    migrationsRun: false,
    synchronize: false,
    logging: false,
    namingStrategy: new SnakeNamingStrategy(),
  } as const;
  if (config.database.kind === 'sqlite') {
    const file = config.database.file;
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      database: file,
      enableWAL: true,
      timeout: 10_000,
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('synchronous = NORMAL');
      },
    };
  }
  return {
    ...common,
    type: 'postgres',
    url: config.database.url,
    extra: {
      max: 10,
      connectionTimeoutMillis: 3_000,
      idleTimeoutMillis: 30_000,
      // A query that cannot finish (e.g. the server went away mid-statement) fails instead of hanging.
      query_timeout: 10_000,
    },
  };
}

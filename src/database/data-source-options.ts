import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { discoverMigrations } from './migrations';
import type { Database } from 'better-sqlite3';
import { DriverHandles, recordingHandles, recordingPg } from './connections';
import { ListenedClient } from './pg-client';
import { SnakeNamingStrategy } from './snake-naming.strategy';

/**
 * The one source of TypeORM options, used by the application and by the TypeORM CLI (`ormconfig.ts`).
 * Entities are registered by each feature module (`TypeOrmModule.forFeature`); the schema comes only from migrations.
 */
export async function dataSourceOptions(config: Pick<AppConfig, 'database'>): Promise<DataSourceOptions> {
  const handles = new DriverHandles();
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
    return recordingHandles(
      {
        ...common,
        type: 'better-sqlite3',
        database: file,
        enableWAL: true,
        timeout: 10_000,
        prepareDatabase: (db: Database) => {
          // WAL + NORMAL: a commit appends to the log without an fsync; the log is synced at each checkpoint.
          db.pragma('synchronous = NORMAL');
          // Checkpoint every 10,000 pages (about 40 MB of log) instead of 1,000: the same hot pages (the right edges
          // of the indexes) are copied back once per checkpoint, so fewer checkpoints write and sync far less.
          // The log file is cut back to 64 MB after a checkpoint. Reads go through an 8 MB page cache; no memory
          // map, whose pages count in the process's resident memory as the file grows (see docs/performance.md).
          db.pragma('wal_autocheckpoint = 10000');
          db.pragma('journal_size_limit = 67108864');
          db.pragma('cache_size = -8000');
          // The statement journal of a statement inside a transaction in memory, not in a file.
          db.pragma('temp_store = MEMORY');
        },
      },
      handles,
    );
  }
  return recordingHandles(
    {
      ...common,
      type: 'postgres',
      url: config.database.url,
      driver: recordingPg(handles),
      extra: {
        // Every pooled connection listens for its own `error` (see ListenedClient): none can end the process.
        Client: ListenedClient,
        max: 10,
        connectionTimeoutMillis: 3_000,
        idleTimeoutMillis: 30_000,
        // A query that cannot finish (e.g. the server went away mid-statement) fails instead of hanging; start-up
        // work runs without this limit (see DatabaseModule).
        query_timeout: config.database.queryTimeoutSeconds * 1000,
      },
    },
    handles,
  );
}

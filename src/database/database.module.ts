import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { dataSourceOptions } from './data-source-options';
import { SqlRunner } from './sql';
import { withStartupLock } from './startup-lock';
import { SqliteTurns, TurnTakingTypeOrmAdapter, withTurn } from './transactions';

/**
 * PostgreSQL: runs the migrations on a data source of their own, without the client-side query timeout of serving
 * (DATABASE_QUERY_TIMEOUT): waiting while another instance migrates, or an index built on a large table, may take
 * longer than any query should while serving, and must not stop the start.
 */
async function migrated(options: Extract<DataSourceOptions, { type: 'postgres' }>): Promise<void> {
  const migrating = await new DataSource({
    ...options,
    migrationsRun: false,
    extra: { ...options.extra, query_timeout: false },
  }).initialize();
  try {
    await withStartupLock(migrating, () => migrating.runMigrations());
  } finally {
    await migrating.destroy();
  }
}

/**
 * SQLite: a key the database numbers (AUTOINCREMENT) must be declared `integer`, which is 64-bit there; the entities
 * declare PostgreSQL's `bigint`. TypeORM has no column type per database, so the metadata says `integer` on SQLite,
 * as the table does (the schema-drift suite compares the two).
 */
function sqliteIncrementKeys(dataSource: DataSource): void {
  for (const entity of dataSource.entityMetadatas) {
    for (const column of entity.generatedColumns) {
      if (column.generationStrategy === 'increment' && column.type === 'bigint') column.type = 'integer';
    }
  }
}

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: async (config: AppConfig) => ({
        ...(await dataSourceOptions(config)),
        // The application's data source serves the one transaction API (the TypeORM CLI's does not).
        subscribers: [SqliteTurns],
        autoLoadEntities: true,
        retryAttempts: 3,
        retryDelay: 1000,
      }),
      // Migrations run before any module uses the data source, one instance at a time (see withStartupLock).
      dataSourceFactory: async (options) => {
        if (options!.type === 'postgres') {
          await migrated(options!);
          return new DataSource(options!).initialize();
        }
        // SQLite (perhaps `:memory:`, a database per connection): the migrations run on the connection that serves.
        const dataSource = await new DataSource({ ...options!, migrationsRun: false }).initialize();
        sqliteIncrementKeys(dataSource);
        try {
          await withTurn(dataSource, () => withStartupLock(dataSource, () => dataSource.runMigrations()));
        } catch (error) {
          await dataSource.destroy();
          throw error;
        }
        return dataSource;
      },
    }),
    // The one transaction API (see transactions.ts). Its plugin only: ClsModule.forRoot would add a global guard and
    // interceptor that do nothing here and put every route through Nest's interceptor pipeline.
    ClsModule.registerPlugins([new ClsPluginTransactional({ adapter: new TurnTakingTypeOrmAdapter({ dataSourceToken: DataSource }) })]),
  ],
  providers: [SqlRunner],
  exports: [SqlRunner],
})
@Global()
export class DatabaseModule {}

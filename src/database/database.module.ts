import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { dataSourceOptions } from './data-source-options';
import { withStartupLock } from './startup-lock';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [AppConfig],
      useFactory: async (config: AppConfig) => ({
        ...(await dataSourceOptions(config)),
        autoLoadEntities: true,
        retryAttempts: 3,
        retryDelay: 1000,
      }),
      // Migrations run before any module uses the data source, one instance at a time (see withStartupLock).
      dataSourceFactory: async (options) => {
        const dataSource = await new DataSource({ ...options!, migrationsRun: false }).initialize();
        try {
          await withStartupLock(dataSource, () => dataSource.runMigrations());
        } catch (error) {
          await dataSource.destroy();
          throw error;
        }
        return dataSource;
      },
    }),
  ],
})
export class DatabaseModule {}

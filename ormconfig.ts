import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AppConfig } from './src/config/app-config';
import { dataSourceOptions } from './src/database/data-source-options';

/** The data source of the TypeORM CLI (`npm run migration:run`), built from the same options as the app. */
export default dataSourceOptions(AppConfig.fromEnv(process.env)).then((options) => new DataSource(options));

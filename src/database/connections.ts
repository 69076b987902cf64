import type { Database } from 'better-sqlite3';
import pg from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';
import { PipelinedConnections } from './pipelined-connection';

/**
 * The driver handles under a TypeORM data source, taken through TypeORM's documented options rather than the
 * driver's properties: SQLite's connection from `prepareDatabase`, PostgreSQL's pool from the `driver` option
 * (node-postgres with a `Pool` subclass that reports each pool it makes; a data source that reconnects makes a
 * new one), with a pipelined connection made from the same settings and ended with the pool.
 */
export class DriverHandles {
  sqlite: Database | undefined;
  pool: pg.Pool | undefined;
  pipeline: PipelinedConnections | undefined;
}

const HANDLES = Symbol('driverHandles');

type WithHandles = DataSourceOptions & { [HANDLES]?: DriverHandles };

/** Options that record their handles (kept through object spreads, which copy symbol keys). */
export function recordingHandles<T extends DataSourceOptions>(options: T, handles: DriverHandles): T {
  return Object.assign(options, { [HANDLES]: handles });
}

/** The handles of a data source made from {@link recordingHandles} options; throws for any other. */
export function handlesOf(dataSource: DataSource): DriverHandles {
  const handles = (dataSource.options as WithHandles)[HANDLES];
  if (!handles) throw new Error('the data source was not made from dataSourceOptions()');
  return handles;
}

/** node-postgres as TypeORM's `driver` option: the module itself, but pools made from it are recorded in `handles`. */
export function recordingPg(handles: DriverHandles): typeof pg {
  class RecordedPool extends pg.Pool {
    private readonly pipeline: PipelinedConnections;

    constructor(config: pg.PoolConfig = {}) {
      super(config);
      handles.pool = this;
      handles.pipeline = this.pipeline = new PipelinedConnections(config);
    }

    override end(): Promise<void>;
    override end(callback: () => void): void;
    override end(callback?: () => void): Promise<void> | void {
      const ended = this.pipeline.end().then(() => super.end());
      if (!callback) return ended;
      void ended.then(callback, callback);
    }
  }
  // The module's other members (types, defaults, Client, ...) through its prototype: its `native` getter, which
  // loads pg-native, is read only if asked for.
  return Object.create(pg, { Pool: { value: RecordedPool } }) as typeof pg;
}

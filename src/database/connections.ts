import pg from 'pg';
import type { DataSource, DataSourceOptions } from 'typeorm';

/**
 * The PostgreSQL pool under a TypeORM data source (for its metrics), taken through TypeORM's documented `driver`
 * option rather than the driver's properties: node-postgres with a `Pool` subclass that reports each pool it makes
 * (a data source that reconnects makes a new one).
 */
export class DriverHandles {
  pool: pg.Pool | undefined;
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
    constructor(config: pg.PoolConfig = {}) {
      super(config);
      handles.pool = this;
    }
  }
  // The module's other members (types, defaults, Client, ...) through its prototype: its `native` getter, which
  // loads pg-native, is read only if asked for.
  return Object.create(pg, { Pool: { value: RecordedPool } }) as typeof pg;
}

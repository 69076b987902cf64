import { Column, type ColumnOptions } from 'typeorm';
import { bigintNumber } from './transformers';

/** A point in time as epoch milliseconds: a `bigint` column read back as a JS number. */
export function EpochMsColumn(options: Omit<ColumnOptions, 'type' | 'transformer'> = {}): PropertyDecorator {
  return Column({ ...options, type: 'bigint', transformer: bigintNumber });
}

/**
 * A boolean column with a default. The migrations write the default as SQL `false`/`true` on both databases;
 * TypeORM would spell a plain `default: false` `0` on SQLite, which its schema builder then finds different.
 */
export function FlagColumn(options: { default: boolean }): PropertyDecorator {
  return Column({ type: 'boolean', default: () => String(options.default) });
}

import { Column, type ColumnOptions } from 'typeorm';
import { bigintNumber } from './transformers';

/** A point in time as epoch milliseconds: a `bigint` column read back as a JS number. */
export function EpochMsColumn(options: Omit<ColumnOptions, 'type' | 'transformer'> = {}): PropertyDecorator {
  return Column({ ...options, type: 'bigint', transformer: bigintNumber });
}

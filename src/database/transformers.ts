import type { ValueTransformer } from 'typeorm';

/** `bigint` columns come back from PostgreSQL as strings; every one we use fits a JS number. */
export const bigintNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? value : Number(value)),
};

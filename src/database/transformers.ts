import type { ValueTransformer } from 'typeorm';

/** `bigint` columns come back from PostgreSQL as strings; every one we use fits a JS number. */
export const bigintNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? value : Number(value)),
};

export const booleanInt: ValueTransformer = {
  to: (value: boolean | null | undefined) => (value === null || value === undefined ? value : value ? 1 : 0),
  from: (value: number | boolean | null) => (value === null || value === undefined ? value : Boolean(value)),
};

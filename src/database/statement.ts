/** Parameterised SQL statements, written once for both databases and compiled for the one in use. */

/** One placeholder syntax for both databases: `:name` (a `::` cast is left alone). */
const PLACEHOLDER = /(?<!:):([A-Za-z_][A-Za-z0-9_]*)/g;

interface Compiled {
  text: string;
  names: string[];
}

/**
 * A parameterised statement written once with `:name` placeholders and compiled, the first time each driver runs
 * it, to that driver's positional form (`$1` for PostgreSQL, `?` for SQLite). Values are always bound, never
 * spliced into the text.
 */
export class Statement {
  private static count = 0;
  private static readonly made: Statement[] = [];
  private readonly compiled: { postgres?: Compiled; sqlite?: Compiled } = {};
  /** The name PostgreSQL prepares it under, once per connection (unique per statement in the process). */
  readonly name = `hot_${++Statement.count}`;
  /** The text PostgreSQL runs; SQLite runs {@link sqliteSource} where the two differ. */
  readonly source: string;
  private readonly sqliteSource: string;

  /**
   * `source`: one text for both databases, or one each where a statement needs what only one of them has.
   *
   * `unprepared`: a maintenance statement whose best plan depends on its values and on the table's size (a batch of
   * expired rows), which the hot paths' plan check (`test/e2e/statement-count`) leaves out.
   */
  constructor(
    source: string | { postgres: string; sqlite: string },
    readonly options: { unprepared?: boolean } = {},
  ) {
    this.source = typeof source === 'string' ? source : source.postgres;
    this.sqliteSource = typeof source === 'string' ? source : source.sqlite;
    Statement.made.push(this);
  }

  /** Every statement made so far in this process (the hot paths make theirs when their modules load). */
  static all(): readonly Statement[] {
    return Statement.made;
  }

  compile(postgres: boolean): Compiled {
    const key = postgres ? 'postgres' : 'sqlite';
    let compiled = this.compiled[key];
    if (!compiled) {
      const names: string[] = [];
      const text = (postgres ? this.source : this.sqliteSource).replace(PLACEHOLDER, (_, name: string) => {
        names.push(name);
        return postgres ? `$${names.length}` : '?';
      });
      compiled = this.compiled[key] = { text: text.replace(/\s+/g, ' ').trim(), names };
    }
    return compiled;
  }
}

/** `sql\`SELECT … WHERE id = :id\``: a {@link Statement}, for the hot paths that skip the ORM's query building. */
export function sql(strings: TemplateStringsArray): Statement {
  if (strings.length !== 1) throw new Error('sql`` takes no interpolations: bind values with :name placeholders');
  return new Statement(strings[0]);
}

/**
 * The retention job's deletion of up to `:batch` rows of `table` that expired before `:cutoff`, by their `key`;
 * planned at each run with its values (the cutoff moves). `table` and `key` are the caller's constants.
 */
export function expiredRowsDeletion(table: string, key = 'id'): Statement {
  return new Statement(`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE expires_at < :cutoff LIMIT :batch)`, {
    unprepared: true,
  });
}

/** Binds `params` to a statement's placeholders, for PostgreSQL or SQLite (which takes booleans as 0 and 1). */
export function bindValues(statement: Statement, params: Record<string, unknown>, postgres: boolean): { text: string; values: unknown[] } {
  const { text, names } = statement.compile(postgres);
  const values = names.map((name) => {
    if (!Object.hasOwn(params, name)) throw new Error(`no value for :${name}`);
    const value = params[name];
    return typeof value === 'boolean' && !postgres ? Number(value) : value;
  });
  return { text, values };
}

/**
 * One statement of an {@link SqlRunner.atomic} group: a {@link Statement} with its parameters, or SQL already in
 * the driver's own form (e.g. from a TypeORM query builder's `getQueryAndParameters()`). With `onlyIfChanged`, it
 * runs only when the statement before it changed a row.
 */
export type Write = StatementWrite | { text: string; values: unknown[]; onlyIfChanged?: boolean };

/** A {@link Statement} with its parameters, as one of a group of writes. */
export interface StatementWrite {
  statement: Statement;
  params: Record<string, unknown>;
  onlyIfChanged?: boolean;
}

export interface SqlResult<Row> {
  rows: Row[];
  /** Rows changed by an INSERT/UPDATE/DELETE (with RETURNING: the rows returned). */
  affected: number;
}

import { DefaultNamingStrategy, type NamingStrategyInterface } from 'typeorm';

/** `createdAt` → `created_at`, `ABCd` → `ab_cd`. */
function snakeCase(name: string): string {
  return name
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}

/**
 * Columns are named after their property in snake_case (`userId` → `user_id`), so entities name a column
 * only when it differs from that. Table names stay explicit in `@Entity()`.
 */
export class SnakeNamingStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override columnName(propertyName: string, customName: string | undefined, embeddedPrefixes: string[]): string {
    const name = customName || snakeCase(propertyName);
    return embeddedPrefixes.length ? [...embeddedPrefixes.map(snakeCase), name].join('_') : name;
  }

  override joinColumnName(relationName: string, referencedColumnName: string): string {
    return snakeCase(`${relationName}_${referencedColumnName}`);
  }

  override joinTableColumnName(tableName: string, propertyName: string, columnName?: string): string {
    return snakeCase(`${tableName}_${columnName ?? propertyName}`);
  }
}

import { CommandRunner, Option } from 'nest-commander';

/** The paging options a list command shares with the list routes: `--limit` and `--offset`, checked by `PageQueryDto`. */
export abstract class PageOptions extends CommandRunner {
  @Option({ flags: '--limit <n>', description: '1 to 100 (default 20)' })
  limit(value: string): string {
    return value;
  }

  @Option({ flags: '--offset <n>', description: 'default 0' })
  offset(value: string): string {
    return value;
  }
}

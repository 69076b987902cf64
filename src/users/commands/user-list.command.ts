import { Command, Option } from 'nest-commander';
import { PageOptions } from '../../common/page-options';
import { printJson, validatedInput } from '../../common/command-line';
import { ListUsersQueryDto } from '../dto/list-users-query.dto';
import { UsersService } from '../users.service';

interface UserListOptions {
  limit?: string;
  offset?: string;
  sort?: string;
  order?: string;
  gender?: string;
}

/** `user:list`: a page of users as `GET /users` answers it (`{ data, page }`), with the same options. */
@Command({ name: 'user:list', description: 'list users as JSON ({ data, page }), as GET /users does' })
export class UserListCommand extends PageOptions {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(_args: string[], options: UserListOptions): Promise<void> {
    printJson(await this.users.list(await validatedInput(ListUsersQueryDto, { ...options })));
  }

  @Option({ flags: '--sort <key>', description: 'createdAt (default), name, email or age' })
  sort(value: string): string {
    return value;
  }

  @Option({ flags: '--order <order>', description: 'asc (default) or desc' })
  order(value: string): string {
    return value;
  }

  @Option({ flags: '--gender <gender>', description: 'female, male or other' })
  gender(value: string): string {
    return value;
  }
}

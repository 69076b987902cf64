import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson, validatedInput } from '../../common/command-line';
import { CreateUserDto } from '../dto/create-user.dto';
import { UsersService } from '../users.service';

interface UserCreateOptions {
  email?: string;
  password?: string;
  name?: string;
  gender?: string;
  age?: string;
  role?: string;
}

/** `user:create`: adds a user (an administrator with `--role admin`) and prints it without the password. */
@Command({ name: 'user:create', description: 'create a user and print it as JSON' })
export class UserCreateCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(_args: string[], options: UserCreateOptions): Promise<void> {
    const { age, ...rest } = options;
    const dto = await validatedInput(CreateUserDto, { ...rest, age: age !== undefined && /^\d+$/.test(age) ? Number(age) : age });
    printJson(await this.users.create(dto));
  }

  @Option({ flags: '--email <email>' })
  email(value: string): string {
    return value;
  }

  @Option({ flags: '--password <password>', description: 'at least 12 characters' })
  password(value: string): string {
    return value;
  }

  @Option({ flags: '--name <name>' })
  name(value: string): string {
    return value;
  }

  @Option({ flags: '--gender <gender>', description: 'female, male or other' })
  gender(value: string): string {
    return value;
  }

  @Option({ flags: '--age <age>' })
  age(value: string): string {
    return value;
  }

  @Option({ flags: '--role <role>', description: 'user (default) or admin' })
  role(value: string): string {
    return value;
  }
}

import { Command, CommandRunner, Option } from 'nest-commander';
import { printJson, validatedInput } from '../../common/command-line';
import { SetPasswordDto } from '../dto/set-password.dto';
import { UsersService } from '../users.service';

/** `user:set-password`: an operator's reset of a person's password; prints the user without it. */
@Command({ name: 'user:set-password', description: "replace a user's password and print the user as JSON" })
export class UserSetPasswordCommand extends CommandRunner {
  constructor(private readonly users: UsersService) {
    super();
  }

  async run(_args: string[], options: { email?: string; password?: string }): Promise<void> {
    printJson(await this.users.setPassword(await validatedInput(SetPasswordDto, { ...options })));
  }

  @Option({ flags: '--email <email>' })
  email(value: string): string {
    return value;
  }

  @Option({ flags: '--password <password>', description: 'at least 12 characters' })
  password(value: string): string {
    return value;
  }
}

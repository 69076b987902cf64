import { Command, CommandRunner, Option } from 'nest-commander';
import { NO_REQUEST } from '../../audit/audit-events';
import { CommandInputError, printJson } from '../../common/command-line';
import { UsersService } from '../../users/users.service';
import { SecondFactorsService } from '../second-factors.service';

/**
 * `user:reset-factors`: an operator's reset for a person who lost their authenticator and recovery codes; they
 * sign in with their password alone and can set up a new one. Audited (`factor.removed`, actor `system`).
 */
@Command({ name: 'user:reset-factors', description: "remove a user's authenticator and recovery codes; prints what was removed as JSON" })
export class UserResetFactorsCommand extends CommandRunner {
  constructor(
    private readonly users: UsersService,
    private readonly secondFactors: SecondFactorsService,
  ) {
    super();
  }

  async run(_args: string[], options: { email?: string }): Promise<void> {
    if (!options.email) throw new CommandInputError('--email is required');
    const user = await this.users.credentials(options.email);
    if (!user) throw new CommandInputError(`no user with email "${options.email}"`);
    const removed = await this.secondFactors.remove(user.id, 'system', NO_REQUEST);
    printJson({ user_id: user.id, removed: removed ? ['totp', 'recovery_codes'] : [] });
  }

  @Option({ flags: '--email <email>' })
  email(value: string): string {
    return value;
  }
}

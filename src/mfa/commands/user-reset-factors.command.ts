import { Command, CommandRunner, Option } from 'nest-commander';
import { BY_SYSTEM } from '../../audit/audit-events';
import { CommandInputError, printJson } from '../../common/command-line';
import { UsersService } from '../../users/users.service';
import { SignInFactorsService } from '../sign-in-factors.service';

/**
 * `user:reset-factors`: an operator's reset for a person who lost their authenticator, recovery codes or passkeys;
 * they sign in with their password alone and can set up new ones. Audited (`factor.removed`, actor `system`).
 */
@Command({
  name: 'user:reset-factors',
  description: "remove a user's authenticator, recovery codes and passkeys; prints what was removed as JSON",
})
export class UserResetFactorsCommand extends CommandRunner {
  constructor(
    private readonly users: UsersService,
    private readonly factors: SignInFactorsService,
  ) {
    super();
  }

  async run(_args: string[], options: { email?: string }): Promise<void> {
    if (!options.email) throw new CommandInputError('--email is required');
    const user = await this.users.credentials(options.email);
    if (!user) throw new CommandInputError(`no user with email "${options.email}"`);
    const { removed } = await this.factors.resetAll(user.id, BY_SYSTEM);
    printJson({
      user_id: user.id,
      removed: [...(removed.totp ? ['totp', 'recovery_codes'] : []), ...(removed.passkeys ? ['passkeys'] : [])],
    });
  }

  @Option({ flags: '--email <email>' })
  email(value: string): string {
    return value;
  }
}

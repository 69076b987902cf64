import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/command-line';
import { SigningKeysService } from '../signing-keys.service';

/**
 * `keys:rotate`, for emergencies: a new signing key active at once (not published ahead, as the scheduled rotation
 * does); the key active until now retires at once and stays published KEY_RETIREMENT_DAYS for its tokens.
 */
@Command({
  name: 'keys:rotate',
  description: 'emergency rotation: add a signing key active at once, retire the active one, print the new kid',
})
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly keys: SigningKeysService) {
    super();
  }

  async run(): Promise<void> {
    printJson({ kid: await this.keys.rotate() });
  }
}

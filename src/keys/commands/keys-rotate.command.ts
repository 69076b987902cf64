import { Command, CommandRunner } from 'nest-commander';
import { printJson } from '../../common/command-line';
import { SigningKeysService } from '../signing-keys.service';

/** `keys:rotate`: adds a new active signing key; older keys stay published until their tokens expire. */
@Command({ name: 'keys:rotate', description: 'add a new active signing key and print its kid' })
export class KeysRotateCommand extends CommandRunner {
  constructor(private readonly keys: SigningKeysService) {
    super();
  }

  async run(): Promise<void> {
    printJson({ kid: await this.keys.rotate() });
  }
}

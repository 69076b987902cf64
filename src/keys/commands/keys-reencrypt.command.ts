import { Command, CommandRunner } from 'nest-commander';
import { CommandInputError, printJson } from '../../common/command-line';
import { KeyEncryptionError } from '../key-encryption';
import { SigningKeysService } from '../signing-keys.service';

/**
 * `keys:reencrypt`: seals every private signing key under KEY_ENCRYPTION_KEY — plain ones, and ones sealed under
 * OLD_KEY_ENCRYPTION_KEY when the key-encryption key is being replaced. Run it with both set, then start the
 * service with the new key only.
 */
@Command({ name: 'keys:reencrypt', description: 'seal every private signing key under KEY_ENCRYPTION_KEY' })
export class KeysReencryptCommand extends CommandRunner {
  constructor(private readonly keys: SigningKeysService) {
    super();
  }

  async run(): Promise<void> {
    try {
      printJson(await this.keys.reencrypt());
    } catch (error) {
      if (error instanceof KeyEncryptionError) throw new CommandInputError(error.message);
      throw error;
    }
  }
}

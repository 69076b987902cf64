import { EventEmitter2 } from '@nestjs/event-emitter';
import { Command, CommandRunner } from 'nest-commander';
import { CommandInputError, printJson } from '../../common/command-line';
import { KeyEncryptionError } from '../key-encryption';
import { KEYS_REENCRYPTING, type ResealedSecrets } from '../key-events';
import { SigningKeysService } from '../signing-keys.service';

/**
 * `keys:reencrypt`: seals every private signing key under KEY_ENCRYPTION_KEY — plain ones, and ones sealed under
 * OLD_KEY_ENCRYPTION_KEY when the key-encryption key is being replaced — and, through the `keys.reencrypting` event,
 * the other secrets sealed with it (authenticator secrets, `resealed.totpSecrets`; the recovery codes' key,
 * `resealed.recoveryCodeKey`). Run it with both set, then start the service with the new key only.
 */
@Command({ name: 'keys:reencrypt', description: 'seal every private signing key under KEY_ENCRYPTION_KEY' })
export class KeysReencryptCommand extends CommandRunner {
  constructor(
    private readonly keys: SigningKeysService,
    private readonly events: EventEmitter2,
  ) {
    super();
  }

  async run(): Promise<void> {
    try {
      const signingKeys = await this.keys.reencrypt();
      const others = (await this.events.emitAsync(KEYS_REENCRYPTING)) as ResealedSecrets[];
      printJson({ ...signingKeys, resealed: Object.assign({}, ...others) as ResealedSecrets });
    } catch (error) {
      if (error instanceof KeyEncryptionError) throw new CommandInputError(error.message);
      throw error;
    }
  }
}

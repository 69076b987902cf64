import { Module } from '@nestjs/common';
import { KeysModule } from '../keys.module';
import { KeysReencryptCommand } from './keys-reencrypt.command';
import { KeysRotateCommand } from './keys-rotate.command';

/** The keys module's commands; imported by the CLI only. */
@Module({ imports: [KeysModule], providers: [KeysRotateCommand, KeysReencryptCommand] })
export class KeysCommandsModule {}

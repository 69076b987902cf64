import { Module } from '@nestjs/common';
import { KeyRotationScheduler } from './key-rotation.scheduler';
import { KeysModule } from './keys.module';

/** The scheduled rotation of the signing keys: imported by the service only (the CLI has `keys:rotate`). */
@Module({ imports: [KeysModule], providers: [KeyRotationScheduler] })
export class KeyRotationModule {}

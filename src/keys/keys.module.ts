import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from '../audit/audit.module';
import { AppConfigModule } from '../config/config.module';
import { KEY_CLOCK, systemClock } from './key-clock';
import { KeysConfig } from './keys.config';
import { SigningKey } from './signing-key.entity';
import { SigningKeysRepository } from './signing-keys.repository';
import { SigningKeysService } from './signing-keys.service';

/**
 * RS256 signing keys in the database (created on first start, rotated on a schedule by the KeyRotationModule and
 * in an emergency by `keys:rotate`; private keys sealed under KEY_ENCRYPTION_KEY, re-sealed by `keys:reencrypt`),
 * published by the authorization server's JWK set endpoint (`oauth/jwks.controller.ts`). The authorization server
 * signs with the active key; the resource server verifies with any published one. Their lifecycle runs on {@link KEY_CLOCK}, which tests replace.
 */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey]), AppConfigModule.forFeature(KeysConfig), AuditModule],
  providers: [SigningKeysService, SigningKeysRepository, { provide: KEY_CLOCK, useValue: systemClock }],
  exports: [SigningKeysService],
})
export class KeysModule {}

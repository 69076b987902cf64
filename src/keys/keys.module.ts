import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfigModule } from '../config/config.module';
import { JwksController } from './jwks.controller';
import { KeysConfig } from './keys.config';
import { SigningKey } from './signing-key.entity';
import { SigningKeysService } from './signing-keys.service';

/**
 * RS256 signing keys in the database (created on first start, rotated by `keys:rotate`; private keys sealed under
 * KEY_ENCRYPTION_KEY, re-sealed by `keys:reencrypt`) and the JWK set that
 * publishes them. The authorization server signs with the active key; the resource server verifies with any
 * published one.
 */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey]), AppConfigModule.forFeature(KeysConfig)],
  controllers: [JwksController],
  providers: [SigningKeysService],
  exports: [SigningKeysService],
})
export class KeysModule {}

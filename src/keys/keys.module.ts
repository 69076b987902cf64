import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { JwksController } from './jwks.controller';
import { SigningKey } from './signing-key.entity';
import { SigningKeysService } from './signing-keys.service';

/**
 * RS256 signing keys in the database (created on first start, rotated by `keys:rotate`) and the JWK set that
 * publishes them. The authorization server signs with the active key; the resource server verifies with any
 * published one.
 */
@Module({
  imports: [TypeOrmModule.forFeature([SigningKey])],
  controllers: [JwksController],
  providers: [SigningKeysService],
  exports: [SigningKeysService],
})
export class KeysModule {}

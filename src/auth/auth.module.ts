import { Module } from '@nestjs/common';
import { APP_GUARD, DiscoveryModule } from '@nestjs/core';
import { JwtModule } from '@nestjs/jwt';
import { PassportModule } from '@nestjs/passport';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CHALLENGE_HOOK, type ChallengeHook } from '../common/challenge-hook';
import { AppConfig } from '../config/app-config';
import { AppConfigModule } from '../config/config.module';
import { KeysModule } from '../keys/keys.module';
import { AuthConfig } from './auth.config';
import { DpopConfig } from './dpop.config';
import { DpopNonces } from './dpop-nonces';
import { DpopProof } from './dpop-proof.entity';
import { DpopProofs } from './dpop-proofs.service';
import { DpopProofsRepository } from './dpop-proofs.repository';
import { Callers } from './callers';
import { AccessTokenVerifier } from './access-token-verifier.service';
import { BearerAuthGuard } from './bearer-auth.guard';
import { withResourceMetadata } from './bearer-challenge';
import { BearerStrategy } from './bearer.strategy';
import { ProtectedResourceMetadataController } from './protected-resource-metadata.controller';
import { RevokedGrant } from './revoked-grant.entity';
import { RevokedGrantsRepository } from './revoked-grants.repository';
import { RevokedGrantsService } from './revoked-grants.service';
import { RouteAccessCheck } from './route-access.check';
import { AuthRetention } from './auth.retention';

/** Every Bearer and DPoP challenge the problem+json filter sends names the metadata URL (RFC 9728 5.1). */
function resourceMetadataHook(config: AppConfig): ChallengeHook {
  return (challenge) => withResourceMetadata(challenge, config.resourceMetadataUrl);
}

/**
 * The resource server's side of OAuth, which every feature module relies on: the global bearer guard (deny by
 * default; `@Public()` opts out, `@Access({...})` declares who may call a route), local access-token verification and
 * the in-memory list of revoked grants, and the RFC 9728 metadata that tells a client where tokens come from. Feature modules need not import it: its decorators are plain functions
 * and the guard is global once the application imports this module.
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([RevokedGrant, DpopProof]),
    AppConfigModule.forFeature(AuthConfig),
    AppConfigModule.forFeature(DpopConfig),
    DiscoveryModule,
    // Verifies DPoP proofs (DpopProofs); no key of its own: each proof carries its public key.
    JwtModule.register({}),
    KeysModule,
    PassportModule,
  ],
  controllers: [ProtectedResourceMetadataController],
  providers: [
    RevokedGrantsService,
    RevokedGrantsRepository,
    AccessTokenVerifier,
    BearerStrategy,
    RouteAccessCheck,
    Callers,
    DpopProofs,
    DpopNonces,
    DpopProofsRepository,
    AuthRetention,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
    { provide: CHALLENGE_HOOK, inject: [AppConfig], useFactory: resourceMetadataHook },
  ],
  // Callers: for modules whose records belong to people (owner or administrator), without importing users.
  // DpopProofs: the token endpoint checks proofs as the guard does, with the same store of used ones.
  exports: [RevokedGrantsService, AccessTokenVerifier, Callers, DpopProofs, DpopProofsRepository],
})
export class AuthModule {}

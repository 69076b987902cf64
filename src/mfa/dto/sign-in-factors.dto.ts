import { ApiProperty } from '@nestjs/swagger';
import type { PasskeyView } from '../passkeys.service';
import type { SecondFactorStatus } from '../second-factors.service';

export class PasskeyResponseDto {
  @ApiProperty({ description: 'the credential id (base64url)' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ description: 'synced between devices (a password manager, a platform account), else bound to one' }) synced: boolean;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time', nullable: true, type: 'string' }) lastUsedAt: string | null;

  static from(passkey: PasskeyView): PasskeyResponseDto {
    const dto = new PasskeyResponseDto();
    dto.id = passkey.id;
    dto.name = passkey.name;
    dto.synced = passkey.deviceType === 'multiDevice';
    dto.createdAt = new Date(passkey.createdAt).toISOString();
    dto.lastUsedAt = passkey.lastUsedAt === null ? null : new Date(passkey.lastUsedAt).toISOString();
    return dto;
  }
}

/** What an administrator sees of a person's sign-in factors (no secret, no public key). */
export class SignInFactorsResponseDto {
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty({ enum: ['none', 'pending', 'active'], description: 'the authenticator app (TOTP)' }) totp: SecondFactorStatus['totp'];
  @ApiProperty({ type: 'integer' }) recoveryCodesLeft: number;
  @ApiProperty({ type: [PasskeyResponseDto] }) passkeys: PasskeyResponseDto[];
}

export class FactorsRemovedDto {
  @ApiProperty({ description: 'an authenticator app and its recovery codes were removed' }) totp: boolean;
  @ApiProperty({ type: 'integer', description: 'how many passkeys were removed' }) passkeys: number;
}

export class FactorsResetResponseDto {
  @ApiProperty({ format: 'uuid' }) userId: string;
  @ApiProperty({ type: FactorsRemovedDto }) removed: FactorsRemovedDto;
}

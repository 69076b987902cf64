import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, FlagColumn } from '../database/columns';
import { bigintNumber } from '../database/transformers';
import { User } from '../users/user.entity';

/** A person's passkey (a WebAuthn credential). */
@Entity('passkeys')
@Index('idx_passkeys_user', ['userId'])
export class Passkey {
  /** The credential id (base64url), as the authenticator returns it. */
  @PrimaryColumn({ type: 'varchar', length: 1400 })
  id: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { name: 'fk_passkeys_user', onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'varchar', length: 64 })
  name: string;

  /** The COSE public key (base64url). */
  @Column({ type: 'text' })
  publicKey: string;

  @Column({ type: 'bigint', default: 0, transformer: bigintNumber })
  signCount: number;

  /** The authenticator's transports (`usb`, `internal`, …), comma-separated. */
  @Column({ type: 'varchar', length: 200, default: '' })
  transports: string;

  @Column({ type: 'varchar', length: 36 })
  aaguid: string;

  /** `multiDevice` (synced, e.g. through a password manager) or `singleDevice` (bound to one authenticator). */
  @Column({ type: 'varchar', length: 16 })
  deviceType: string;

  @FlagColumn({ default: false })
  backedUp: boolean;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn({ nullable: true })
  lastUsedAt: number | null;
}

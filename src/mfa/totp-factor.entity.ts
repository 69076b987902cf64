import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { bigintNumber } from '../database/transformers';
import { User } from '../users/user.entity';

/** A person's TOTP authenticator: its secret (sealed when a key-encryption key is set) and its wrong codes in a row. */
@Entity('totp_factors')
export class TotpFactor {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { name: 'fk_totp_factors_user', onDelete: 'CASCADE' })
  userId: string;

  @Column({ type: 'text' })
  secret: string;

  @EpochMsColumn()
  createdAt: number;

  /** Set once a first code matched; null while it is being set up. */
  @EpochMsColumn({ nullable: true })
  confirmedAt: number | null;

  /** The last time step used: no code of it or before it is accepted again. */
  @Column({ type: 'bigint', default: 0, transformer: bigintNumber })
  lastStep: number;

  @Column({ type: 'integer', default: 0 })
  failures: number;

  /** Every code is refused until then, after too many wrong ones in a row; null when not locked. */
  @EpochMsColumn({ nullable: true })
  lockedUntil: number | null;

  /** Locks in a row, with no right code in between. */
  @Column({ type: 'integer', default: 0 })
  locks: number;
}

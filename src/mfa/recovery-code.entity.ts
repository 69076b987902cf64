import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { User } from '../users/user.entity';

/** One of a person's recovery codes, as its hash; each is used once. */
@Entity('recovery_codes')
@Index('idx_recovery_codes_user', ['userId'])
export class RecoveryCode {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  codeHash: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { name: 'fk_recovery_codes_user', onDelete: 'CASCADE' })
  userId: string;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn({ nullable: true })
  usedAt: number | null;
}

import { Column, Entity, ForeignKey, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { User } from '../../users/user.entity';
import { Client } from './client.entity';

/** The scopes a user has granted a client, so the consent page is not shown again for them. */
@Entity('consents')
export class Consent {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  @ForeignKey(() => Client, { onDelete: 'CASCADE' })
  clientId: string;

  @Column({ type: 'text' })
  scope: string;

  @EpochMsColumn()
  updatedAt: number;
}

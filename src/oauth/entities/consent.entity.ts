import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';

/** The scopes a user has granted a client, so the consent page is not shown again for them. */
@Entity('consents')
export class Consent {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  userId: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  clientId: string;

  @Column({ type: 'text' })
  scope: string;

  @EpochMsColumn()
  updatedAt: number;
}

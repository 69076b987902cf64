import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

/** The scopes a user has granted a client, so the consent page is not shown again for them. */
@Entity('consents')
export class Consent {
  @PrimaryColumn({ name: 'user_id', type: 'varchar', length: 36 })
  userId: string;

  @PrimaryColumn({ name: 'client_id', type: 'varchar', length: 64 })
  clientId: string;

  @Column({ type: 'varchar', length: 200 })
  scope: string;

  @Column({ name: 'updated_at', type: 'bigint', transformer: bigintNumber })
  updatedAt: number;
}

import { Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';
import { Client } from './client.entity';

/** A `private_key_jwt` assertion already used (its `jti`, as SHA-256), kept until the assertion expires. */
@Entity('client_assertion_jtis')
@Index('idx_client_assertion_jtis_expires', ['expiresAt'])
export class ClientAssertionJti {
  @PrimaryColumn({ type: 'varchar', length: 255 })
  @ForeignKey(() => Client, { onDelete: 'CASCADE' })
  clientId: string;

  @PrimaryColumn({ type: 'varchar', length: 64 })
  jtiHash: string;

  @EpochMsColumn()
  expiresAt: number;
}

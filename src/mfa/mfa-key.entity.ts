import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

/** One of the service's own keys of the second factors (the recovery codes' HMAC key), sealed like their secrets. */
@Entity('mfa_keys')
export class MfaKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  name: string;

  @Column({ type: 'text' })
  secret: string;

  @EpochMsColumn()
  createdAt: number;
}

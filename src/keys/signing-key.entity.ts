import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  kid: string;

  @Column({ type: 'text' })
  privateJwk: string;

  @Column({ type: 'text' })
  publicJwk: string;

  @EpochMsColumn()
  createdAt: number;
}

import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

@Entity('signing_keys')
export class SigningKey {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  kid: string;

  @Column({ name: 'private_jwk', type: 'text' })
  privateJwk: string;

  @Column({ name: 'public_jwk', type: 'text' })
  publicJwk: string;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;
}

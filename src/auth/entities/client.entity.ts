import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintNumber } from '../../database/transformers';

@Entity('clients')
export class Client {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  /** SHA-256 of the secret; null for public clients. */
  @Column({ name: 'secret_hash', type: 'varchar', length: 64, nullable: true })
  secretHash: string | null;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({
    name: 'redirect_uris',
    type: 'text',
    transformer: { to: (v: string[]) => JSON.stringify(v), from: (v: string) => JSON.parse(v) as string[] },
  })
  redirectUris: string[];

  /** The scopes this client may request, space-separated. */
  @Column({ type: 'varchar', length: 200 })
  scope: string;

  @Column({ name: 'is_public', type: 'boolean' })
  isPublic: boolean;

  /** First-party: no consent screen. */
  @Column({ type: 'boolean' })
  trusted: boolean;

  @Column({ name: 'created_at', type: 'bigint', transformer: bigintNumber })
  createdAt: number;
}

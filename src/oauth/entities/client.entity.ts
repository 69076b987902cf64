import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../../database/columns';

@Entity('clients')
export class Client {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id: string;

  /** SHA-256 of the secret; null for public clients. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  secretHash: string | null;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({
    type: 'text',
    transformer: { to: (v: string[]) => JSON.stringify(v), from: (v: string) => JSON.parse(v) as string[] },
  })
  redirectUris: string[];

  /** The scopes this client may request, space-separated. */
  @Column({ type: 'text' })
  scope: string;

  @Column({ type: 'boolean' })
  isPublic: boolean;

  /** First-party: no consent screen. */
  @Column({ type: 'boolean' })
  trusted: boolean;

  @EpochMsColumn()
  createdAt: number;
}

import { Column, Entity, ForeignKey, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';
import { User } from '../users/user.entity';
import { Connection } from './connection.entity';

/** A person as a connection knows them: the upstream's subject, linked to a person of this service. */
@Entity('identities')
@Index('idx_identities_user', ['userId'])
export class Identity {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  @ForeignKey(() => Connection, { onDelete: 'CASCADE' })
  connectionId: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  subject: string;

  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { onDelete: 'CASCADE' })
  userId: string;

  @EpochMsColumn()
  createdAt: number;
}

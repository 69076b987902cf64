import { Column, Entity, PrimaryColumn } from 'typeorm';

/** Number of users per gender, kept exact by database triggers (see the initial migration). */
@Entity('user_counts')
export class UserCount {
  @PrimaryColumn({ type: 'varchar', length: 10 })
  gender: string;

  @Column({ type: 'integer', default: 0 })
  total: number;
}

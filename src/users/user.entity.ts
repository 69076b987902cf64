import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

export const GENDERS = ['female', 'male', 'other'] as const;
export type Gender = (typeof GENDERS)[number];
export const ROLES = ['user', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Every list query is served by an index: the gender filter, the sort key and the id tie-break; and each sort alone. */
@Entity('users')
@Index('idx_users_gender_age', ['gender', 'age', 'id'])
@Index('idx_users_age', ['age', 'id'])
@Index('idx_users_gender_name', ['gender', 'name', 'id'])
@Index('idx_users_name', ['name', 'id'])
@Index('idx_users_gender_email', ['gender', 'email', 'id'])
@Index('idx_users_email', ['email', 'id'])
@Index('idx_users_gender_created_at', ['gender', 'createdAt', 'id'])
@Index('idx_users_created_at', ['createdAt', 'id'])
export class User {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 254 })
  email: string;

  /** Lower-cased email: the unique key, so that uniqueness is case-insensitive. */
  @Column({ type: 'varchar', length: 254, unique: true })
  emailNormalized: string;

  @Column({ type: 'varchar', length: 255, select: false })
  passwordHash: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 10 })
  gender: Gender;

  @Column({ type: 'integer' })
  age: number;

  @Column({ type: 'varchar', length: 10, default: 'user' })
  role: Role;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  updatedAt: number;
}

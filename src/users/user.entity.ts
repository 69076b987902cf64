import { Column, Entity, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';

export const GENDERS = ['female', 'male', 'other'] as const;
export type Gender = (typeof GENDERS)[number];
export const ROLES = ['user', 'admin'] as const;
export type Role = (typeof ROLES)[number];

@Entity('users')
export class User {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ type: 'varchar', length: 254 })
  email: string;

  /** Lower-cased email: the unique key, so that uniqueness is case-insensitive. */
  @Column({ type: 'varchar', length: 254 })
  emailNormalized: string;

  @Column({ type: 'varchar', length: 255, select: false })
  passwordHash: string;

  @Column({ type: 'varchar', length: 100 })
  name: string;

  @Column({ type: 'varchar', length: 10 })
  gender: Gender;

  @Column({ type: 'integer' })
  age: number;

  @Column({ type: 'varchar', length: 10 })
  role: Role;

  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  updatedAt: number;
}

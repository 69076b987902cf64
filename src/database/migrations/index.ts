import { InitialSchema1732240000000 } from './1732240000000-initial-schema';
import { AuthorizationServer1732240100000 } from './1732240100000-authorization-server';

/** Every migration, in order. A new module appends its own here. */
export const migrations = [InitialSchema1732240000000, AuthorizationServer1732240100000];

import { Controller, Delete, Get, Module, Post } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { AnyPerson, AnyScope, Roles, Scopes } from '../../src/auth/auth.decorators';
import { createTestApp, createTestDatabase } from '../support/test-app';

// Team routes as a team might write them by mistake. Casts stand for what the type checker cannot stop: a call
// through `any`, a spread of an empty list, or plain JavaScript.
const emptyScopes = Scopes as unknown as () => MethodDecorator;
const emptyRoles = Roles as unknown as () => MethodDecorator;
const looseScopes = Scopes as unknown as (...scopes: string[]) => MethodDecorator;

@Controller('team-undeclared')
class UndeclaredController {
  @Get()
  open(): string {
    return 'anyone with a token';
  }
}

@Controller('team-empty-scopes')
class EmptyScopesController {
  @Get()
  @emptyScopes()
  halfDeleted(): string {
    return 'any token';
  }
}

@Controller('team-unknown-scope')
class UnknownScopeController {
  @Get()
  @looseScopes('products:read')
  typo(): string {
    return 'nobody';
  }
}

@Controller('team-empty-roles')
class EmptyRolesController {
  @Get()
  @AnyScope()
  @emptyRoles()
  noRole(): string {
    return 'nobody';
  }
}

@Controller('team-both')
class BothController {
  @Get()
  @Scopes('users:read')
  @AnyScope()
  confused(): string {
    return 'which one';
  }
}

@Controller('widgets')
class RoleForgottenController {
  @Post()
  @Scopes('users:write')
  create(): string {
    return 'anyone with the scope';
  }
}

@Controller('team-role-and-person')
class RoleAndPersonController {
  @Delete(':id')
  @Scopes('users:write')
  @Roles('admin')
  @AnyPerson()
  remove(): string {
    return 'which one';
  }
}

const cases = [
  {
    controller: UndeclaredController,
    handler: 'UndeclaredController.open',
    problem: 'declares neither @Public(), @Scopes(...) nor @AnyScope()',
  },
  { controller: EmptyScopesController, handler: 'EmptyScopesController.halfDeleted', problem: '@Scopes() is empty' },
  { controller: UnknownScopeController, handler: 'UnknownScopeController.typo', problem: 'unknown scopes: products:read' },
  { controller: EmptyRolesController, handler: 'EmptyRolesController.noRole', problem: '@Roles() needs at least one role' },
  { controller: BothController, handler: 'BothController.confused', problem: 'both @Scopes(...) and @AnyScope()' },
  // A write route says whose call it is; the start names it by method and path.
  {
    controller: RoleForgottenController,
    handler: 'POST /widgets (RoleForgottenController.create)',
    problem: 'writes, and declares neither @Roles(...) nor @AnyPerson()',
  },
  {
    controller: RoleAndPersonController,
    handler: 'DELETE /team-role-and-person/:id (RoleAndPersonController.remove)',
    problem: 'declares both @Roles(...) and @AnyPerson()',
  },
];

describe('start-up check of access declarations (fail closed)', () => {
  it.each(cases)('refuses to start with $handler and names it', async ({ controller, handler, problem }) => {
    @Module({ controllers: [controller] })
    class TeamModule {}
    const db = await createTestDatabase();
    try {
      const started = createTestApp({}, db, { imports: [TeamModule] });
      await expect(started).rejects.toThrow(handler);
      await expect(started).rejects.toThrow(problem);
    } finally {
      await db.drop();
    }
  });
});

import { Controller, Delete, Get, Module, Post } from '@nestjs/common';
import { describe, expect, it } from 'vitest';
import { Access, type AccessRule, Public } from '../../src/auth/auth.decorators';
import { createTestApp, createTestDatabase } from '../support/test-app';

// Team routes as a team might write them by mistake. The casts stand for what the type checker cannot stop: a
// call through `any`, a spread of an empty list, a rule built at run time, or plain JavaScript.
const loose = (rule: Record<string, unknown>) => Access(rule as unknown as AccessRule);

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
  @loose({ scopes: [], people: 'any' })
  halfDeleted(): string {
    return 'any token';
  }
}

@Controller('team-unknown-scope')
class UnknownScopeController {
  @Get()
  @loose({ scopes: ['no-module-defines-this:read'], people: 'any' })
  typo(): string {
    return 'nobody';
  }
}

@Controller('team-empty-roles')
class EmptyRolesController {
  @Get()
  @loose({ scopes: 'any', people: [] })
  noRole(): string {
    return 'nobody';
  }
}

@Controller('team-no-people')
class NoPeopleController {
  @Get()
  @loose({ scopes: ['users:read'] })
  forgotten(): string {
    return 'whom';
  }
}

// A write route whose roles were deleted from its rule: the start names it by method and path.
@Controller('widgets')
class RoleForgottenController {
  @Post()
  @loose({ scopes: ['users:write'] })
  create(): string {
    return 'anyone with the scope';
  }
}

// Open to every person, writing, and not kept to the caller's own records: anyone could change anyone's.
@Controller('team-everyone-writes')
class EveryoneWritesController {
  @Delete(':id')
  @Access({ scopes: ['users:write'], people: 'any' })
  remove(): string {
    return 'anyone';
  }
}

// Public on the controller, a rule on the handler: which one was meant?
@Public()
@Controller('team-both')
class BothController {
  @Get()
  @Access({ scopes: ['users:read'], people: ['admin'] })
  confused(): string {
    return 'which one';
  }
}

const cases = [
  {
    controller: UndeclaredController,
    handler: 'GET /team-undeclared (UndeclaredController.open)',
    problem: 'declares neither @Public() nor @Access({ scopes, people })',
  },
  { controller: EmptyScopesController, handler: 'EmptyScopesController.halfDeleted', problem: '@Access() needs scopes' },
  { controller: UnknownScopeController, handler: 'UnknownScopeController.typo', problem: 'unknown scopes: no-module-defines-this:read' },
  { controller: EmptyRolesController, handler: 'EmptyRolesController.noRole', problem: '@Access() needs people' },
  { controller: NoPeopleController, handler: 'GET /team-no-people (NoPeopleController.forgotten)', problem: '@Access() needs people' },
  { controller: RoleForgottenController, handler: 'POST /widgets (RoleForgottenController.create)', problem: '@Access() needs people' },
  {
    controller: EveryoneWritesController,
    handler: 'DELETE /team-everyone-writes/:id (EveryoneWritesController.remove)',
    problem: 'lets any person write without acting on their own records only',
  },
  { controller: BothController, handler: 'GET /team-both (BothController.confused)', problem: 'declares both @Public() and @Access()' },
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

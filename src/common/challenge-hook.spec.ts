import { Controller, Get, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { CHALLENGE_HOOK, type ChallengeHook } from './challenge-hook';
import { HttpProblemError } from './http-problem.error';
import { ProblemDetailsFilter } from './problem-details.filter';

@Controller()
class Probe {
  @Get('challenged')
  challenged(): never {
    throw new HttpProblemError(401, 'unauthorized', 'No token.', { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  }
}

/** The challenge the problem+json filter sends, with the given providers in a module of their own. */
async function challengeSent(providers: Provider[]): Promise<string | undefined> {
  const module = await Test.createTestingModule({ controllers: [Probe], providers }).compile();
  const app = module.createNestApplication({ logger: false });
  app.useGlobalFilters(new ProblemDetailsFilter(module.get(ModuleRef)));
  await app.init();
  try {
    const res = await request(app.getHttpServer()).get('/challenged');
    expect(res.status).toBe(401);
    return res.headers['www-authenticate'];
  } finally {
    await app.close();
  }
}

describe('the challenge hook', () => {
  it('completes the challenge of a problem answer when a module provides one', async () => {
    const hook: ChallengeHook = (challenge) => `${challenge}, realm="api"`;
    expect(await challengeSent([{ provide: CHALLENGE_HOOK, useValue: hook }])).toBe('Bearer error="invalid_token", realm="api"');
  });

  it('leaves the challenge as written when no module provides one', async () => {
    expect(await challengeSent([])).toBe('Bearer error="invalid_token"');
  });
});

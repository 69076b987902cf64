import { Controller, Get, type LoggerService } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { accessLogMiddleware } from '../logging/access-log.middleware';
import { NotReadyError } from './not-ready.error';
import { ProblemDetailsFilter } from './problem-details.filter';

@Controller()
class Probe {
  @Get('draining')
  draining(): never {
    throw new NotReadyError(true);
  }

  @Get('not-ready')
  notReady(): never {
    throw new NotReadyError(false);
  }

  @Get('broken')
  broken(): never {
    throw new Error('boom');
  }
}

/** The levels of what the problem filter (through Nest's logger) and the access log wrote for one request. */
async function logged(path: string): Promise<{ status: number; body: unknown; lines: string[] }> {
  const lines: string[] = [];
  const nest: LoggerService = {
    log: () => {},
    warn: (entry: unknown, msg?: string) => void lines.push(`warn ${msg ?? String(entry)}`),
    error: (entry: { err?: string }) => void lines.push(`error ${entry.err?.split('\n')[0]}`),
  };
  const access = {
    info: (_: object, msg: string) => lines.push(`info ${msg}`),
    error: (_: object, msg: string) => lines.push(`error ${msg}`),
  } as unknown as Logger;
  const module = await Test.createTestingModule({ controllers: [Probe] }).compile();
  const app = module.createNestApplication<NestExpressApplication>({ logger: nest });
  app.useGlobalFilters(new ProblemDetailsFilter(module.get(ModuleRef)));
  app.use(accessLogMiddleware(access));
  await app.init();
  try {
    const res = await request(app.getHttpServer()).get(path);
    return { status: res.status, body: JSON.parse(res.text) as unknown, lines };
  } finally {
    await app.close();
  }
}

describe('NotReadyError', () => {
  it('while draining: answered 503 as a problem and logged once, at info, by the access log: not as an error', async () => {
    const { status, body, lines } = await logged('/draining');
    expect(status).toBe(503);
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The service is temporarily unavailable.',
      instance: '/draining',
    });
    expect(lines).toEqual(['info request completed']);
  });

  it('with a check down (not draining): the same 503, and one warning line so that an outage shows in the log', async () => {
    const { status, lines } = await logged('/not-ready');
    expect(status).toBe(503);
    expect(lines).toEqual(['warn not ready: a check is down', 'info request completed']);
  });

  it('leaves a fault logged as one: the filter and the access log both report it as an error', async () => {
    const { status, lines } = await logged('/broken');
    expect(status).toBe(500);
    expect(lines).toEqual(['error Error: boom', 'error request errored']);
  });
});

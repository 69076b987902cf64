import { Body, Controller, Delete, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { type AuditBy, AuditedBy } from '../audit/audit-events';
import { Access } from '../auth/auth.decorators';
import { ApiProblems } from '../common/openapi';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { type ConnectionView, ConnectionsService } from './connections.service';
import { ConnectionsScope } from './connections.scopes';
import { CreateConnectionDto } from './dto/create-connection.dto';

const CONNECTION_ID = ApiParam({ name: 'connectionId', schema: { type: 'string', format: 'uuid' } });

/** The admin API for company sign-in connections, for administrators with a token carrying `connections:admin`. */
@ApiTags('admin')
@ApiProblems(503)
@Controller('admin/connections')
@Access({ scopes: [ConnectionsScope.admin], people: ['admin'] })
export class AdminConnectionsController {
  constructor(private readonly connections: ConnectionsService) {}

  @Get()
  @ApiOkResponse({ description: 'Every connection, by name (never a client secret)' })
  @ApiProblems(400)
  list(@NoQueryParams() _query: unknown): Promise<ConnectionView[]> {
    return this.connections.list();
  }

  @Get(':connectionId')
  @CONNECTION_ID
  @ApiOkResponse({ description: 'The connection (never its client secret)' })
  @ApiProblems(400, 404)
  get(@Param('connectionId', UuidParamPipe) id: string, @NoQueryParams() _query: unknown): Promise<ConnectionView> {
    return this.connections.get(id);
  }

  @Post()
  @ApiCreatedResponse({ description: 'The new connection; Location: /admin/connections/{connectionId}' })
  @ApiProblems(400, 409, 413, 415)
  async create(
    @Body() body: CreateConnectionDto,
    @NoQueryParams() _query: unknown,
    @Res({ passthrough: true }) res: Response,
    @AuditedBy() by: AuditBy,
  ): Promise<ConnectionView> {
    const created = await this.connections.create(body, by);
    res.location(`/admin/connections/${created.id}`);
    return created;
  }

  @Delete(':connectionId')
  @HttpCode(204)
  @CONNECTION_ID
  @ApiNoContentResponse({ description: 'Deleted, with the identities it vouched for (their people stay)' })
  @ApiProblems(400, 404)
  async delete(
    @Param('connectionId', UuidParamPipe) id: string,
    @NoQueryParams() _query: unknown,
    @AuditedBy() by: AuditBy,
  ): Promise<void> {
    await this.connections.delete(id, by);
  }
}

import { Body, Controller, Get, Param, Post, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiProblems, ApiUuidParams } from '../common/openapi';
import { Access, Principal } from '../auth/auth.decorators';
import type { AuthPrincipal } from '../auth/principal';
import type { Page } from '../common/pagination';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { CreateOrderDto } from './dto/create-order.dto';
import { ListOrdersQueryDto } from './dto/list-orders-query.dto';
import { OrderPageResponseDto, OrderResponseDto } from './dto/order-response.dto';
import { OrdersScope } from './orders.scopes';
import { OrdersService } from './orders.service';

@ApiTags('orders')
@ApiProblems(503)
@ApiUuidParams('userId')
@Controller('users/:userId/orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Get()
  @Access({ scopes: [OrdersScope.read], people: 'any', ownRecords: true })
  @ApiOkResponse({ type: OrderPageResponseDto })
  @ApiProblems(404)
  list(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @Query() query: ListOrdersQueryDto,
  ): Promise<Page<OrderResponseDto>> {
    return this.orders.list(principal, userId, query);
  }

  @Get(':orderId')
  @ApiUuidParams('orderId')
  @Access({ scopes: [OrdersScope.read], people: 'any', ownRecords: true })
  @ApiOkResponse({ type: OrderResponseDto })
  @ApiProblems(404)
  get(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @Param('orderId', UuidParamPipe) orderId: string,
    @NoQueryParams() _query: unknown,
  ): Promise<OrderResponseDto> {
    return this.orders.get(principal, userId, orderId);
  }

  @Post()
  // A person orders for themselves; an administrator for anyone (OrdersService decides).
  @Access({ scopes: [OrdersScope.write], people: 'any', ownRecords: true })
  @ApiCreatedResponse({ type: OrderResponseDto, description: 'Location: /users/{userId}/orders/{id}' })
  @ApiProblems(404, 413, 415)
  async create(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @Body() body: CreateOrderDto,
    @NoQueryParams() _query: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderResponseDto> {
    const order = await this.orders.create(principal, userId, body);
    res.location(`/users/${userId}/orders/${order.id}`);
    return order;
  }
}

import { Module } from '@nestjs/common';
import { ResourceController } from './resource.controller';

/** `GET /api/resource`: answers from the token alone, no database round trip. */
@Module({ controllers: [ResourceController] })
export class ResourceModule {}

import { Module } from '@nestjs/common';
import { SafeFetcher } from './safe-fetcher';

/** {@link SafeFetcher}, for the modules that fetch documents their requesters name. */
@Module({ providers: [SafeFetcher], exports: [SafeFetcher] })
export class SafeFetchModule {}

import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AppConfigModule } from '../config/config.module';
import { HealthConfig } from './health.config';
import { HealthController } from './health.controller';
import { ShutdownDrain } from './shutdown-drain';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), AppConfigModule.forFeature(HealthConfig)],
  controllers: [HealthController],
  providers: [ShutdownDrain],
  exports: [ShutdownDrain],
})
export class HealthModule {}

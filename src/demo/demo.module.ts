import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { UsersModule } from '../users/users.module';
import { DemoDataService } from './demo-data.service';
import { DemoController } from './demo.controller';

@Module({
  imports: [AuthModule, UsersModule],
  controllers: [DemoController],
  providers: [DemoDataService],
  exports: [DemoDataService],
})
export class DemoModule {}

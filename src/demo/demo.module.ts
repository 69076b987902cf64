import { Module } from '@nestjs/common';
import { OAuthModule } from '../oauth';
import { OrdersModule } from '../orders/orders.module';
import { UsersModule } from '../users/users.module';
import { DemoDataService } from './demo-data.service';
import { DemoController } from './demo.controller';

@Module({
  imports: [OAuthModule, UsersModule, OrdersModule],
  controllers: [DemoController],
  providers: [DemoDataService],
  exports: [DemoDataService],
})
export class DemoModule {}

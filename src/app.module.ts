import { Module } from '@nestjs/common';
import { AuthModule } from './auth/auth.module';
import { CommonModule } from './common/common.module';
import { AppConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DemoModule } from './demo/demo.module';
import { OrdersModule } from './orders/orders.module';
import { ResourceModule } from './resource/resource.module';
import { UsersModule } from './users/users.module';

@Module({
  imports: [AppConfigModule, DatabaseModule, CommonModule, AuthModule, UsersModule, OrdersModule, ResourceModule, DemoModule],
})
export class AppModule {}

import { OrdersModule } from './orders/orders.module';
import { ResourceModule } from './resource/resource.module';
import { UsersModule } from './users/users.module';

/**
 * The resource API's feature modules. The HTTP application serves their routes; the command line loads them too,
 * so that both see the same scopes, errors, entities and configuration. A team's new module is one line here.
 * Express tries routes in this order: the resource API's one route, called on every request of an API client, first.
 */
export const FEATURE_MODULES = [ResourceModule, UsersModule, OrdersModule];

import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { OrdersRepository } from '../orders/orders.repository';
import { UsersRepository } from '../users/users.repository';
import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { withStartupLock } from '../database/startup-lock';
import { DomainError } from '../common/domain-error';
import { UsersError } from '../users/users.errors';
import { allScopes } from '../auth/scopes';
import { ClientsService, OAuthConfig } from '../oauth';
import { randomSecret, s256 } from '../crypto/secrets';
import { AppConfig } from '../config/app-config';
import { UsersService } from '../users/users.service';
import { PasswordHasher } from '../users/password-hasher';
import { User } from '../users/user.entity';
import { Order } from '../orders/order.entity';
import { samplePeople } from './sample-people';
import type { DemoData } from './demo-commands';

const DEMO_ADMIN = 'admin@example.com';

/**
 * Outside production, on an empty database: a demo admin and a demo client, shown once, and sample people
 * with orders ({@link samplePeople}). The sample people share one argon2id hash of a random password nobody is
 * told (they are there to be listed, not to sign in), so seeding costs one hash, not 36; they are written through
 * the users' and orders' entities directly, as a seeder of a development database may.
 */
@Injectable()
export class DemoDataService {
  constructor(
    private readonly users: UsersService,
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    private readonly oauthConfig: OAuthConfig,
    private readonly dataSource: DataSource,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly hasher: PasswordHasher,
    private readonly userRows: UsersRepository,
    private readonly orderRows: OrdersRepository,
  ) {}

  /**
   * Seeds an empty database; of several instances starting together on one, exactly one does (and shows it):
   * on PostgreSQL they take turns under the start-up lock, on SQLite the admin's unique email decides.
   */
  async seedIfEmpty(): Promise<DemoData | undefined> {
    if (this.config.production || !(await this.users.isEmpty())) return undefined;
    return withStartupLock(this.dataSource, async () => {
      if (!(await this.users.isEmpty())) return undefined;
      try {
        return await this.seed();
      } catch (error) {
        if (error instanceof DomainError && error.code === UsersError.EmailTaken) return undefined;
        throw error;
      }
    });
  }

  private async seedSamplePeople(): Promise<void> {
    const passwordHash = await this.hasher.hash(randomSecret(24));
    const now = Date.now();
    const users: User[] = [];
    const orders: Order[] = [];
    samplePeople().forEach((person, i) => {
      // One millisecond apart, so the default order (createdAt) is the listed order.
      const createdAt = now + i;
      const userId = randomUUID();
      users.push(
        Object.assign(new User(), {
          id: userId,
          email: person.email,
          emailNormalized: person.email,
          passwordHash,
          name: person.name,
          gender: person.gender,
          age: person.age,
          role: 'user',
          createdAt,
          updatedAt: createdAt,
        }),
      );
      for (const order of person.orders) {
        orders.push(
          Object.assign(new Order(), {
            id: randomUUID(),
            userId,
            ...order,
            currency: 'EUR',
            totalCents: order.quantity * order.unitPriceCents,
            createdAt,
          }),
        );
      }
    });
    await this.transactions.withTransaction(async () => {
      await this.userRows.insertMany(users);
      await this.orderRows.insertMany(orders);
    });
  }

  /**
   * On a later start outside production, while the demo admin is still there: how to set its password, which was
   * shown only once.
   */
  async adminReminder(): Promise<string | undefined> {
    if (this.config.production || !(await this.users.credentials(DEMO_ADMIN))) return undefined;
    return `demo admin: ${DEMO_ADMIN} (its password was shown once); a new one: npm run cli -- user:set-password --email ${DEMO_ADMIN} --password '<12 or more characters>'\n`;
  }

  private async seed(): Promise<DemoData> {
    const adminEmail = DEMO_ADMIN;
    const adminPassword = randomSecret(12);
    await this.users.create({ email: adminEmail, password: adminPassword, name: 'Demo Admin', gender: 'other', age: 30, role: 'admin' });
    const redirectUri = `${this.config.issuer}/demo/callback`;
    // Not trusted, so that a newcomer's first flow shows every page, the consent page included (once: it is remembered).
    const client = await this.clients.create({ name: 'Demo Client', redirectUris: [redirectUri], trusted: false });
    await this.seedSamplePeople();
    // A code request as a careful client makes it: PKCE (S256) and an unguessable state. The verifier is shown
    // with the client's secret, once; the URL may be opened again for a new code while the verifier is kept.
    const codeVerifier = randomSecret(32);
    const url = new URL(`${this.config.issuer}/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: allScopes().join(' '),
      state: randomSecret(12),
      code_challenge: s256(codeVerifier),
      code_challenge_method: 'S256',
    }).toString();
    return {
      issuer: this.config.issuer,
      adminEmail,
      adminPassword,
      clientId: client.client_id,
      clientSecret: client.client_secret!,
      codeVerifier,
      authorizationUrl: url.toString(),
      codeTtlSeconds: this.oauthConfig.authCodeTtl,
    };
  }
}

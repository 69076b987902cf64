import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { withStartupLock } from '../database/startup-lock';
import { DomainError } from '../common/domain-error';
import { UsersError } from '../users/users.errors';
import { allScopes } from '../auth/scopes';
import { ClientsService } from '../oauth/clients.service';
import { randomSecret } from '../oauth/secrets';
import { AppConfig } from '../config/app-config';
import { UsersService } from '../users/users.service';

export interface DemoData {
  adminEmail: string;
  adminPassword: string;
  clientId: string;
  clientSecret: string;
  authorizationUrl: string;
}

/** Outside production, on an empty database: a demo admin and a trusted demo client, shown once. */
@Injectable()
export class DemoDataService {
  constructor(
    private readonly users: UsersService,
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
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

  private async seed(): Promise<DemoData> {
    const adminEmail = 'admin@example.com';
    const adminPassword = randomSecret(12);
    await this.users.create({ email: adminEmail, password: adminPassword, name: 'Demo Admin', gender: 'other', age: 30, role: 'admin' });
    const redirectUri = `${this.config.issuer}/demo/callback`;
    const client = await this.clients.create({ name: 'Demo Client', redirectUris: [redirectUri], trusted: true });
    const url = new URL(`${this.config.issuer}/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: allScopes().join(' '),
      state: 'demo',
    }).toString();
    return {
      adminEmail,
      adminPassword,
      clientId: client.client_id,
      clientSecret: client.client_secret!,
      authorizationUrl: url.toString(),
    };
  }
}

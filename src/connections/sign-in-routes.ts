import { Injectable } from '@nestjs/common';
import type { SignInConnections, SignInLink } from '../oauth';
import { ConnectionsService } from './connections.service';

/** The login form's company sign-in (see SignInConnections): a connection's start URL, by domain or by button. */
@Injectable()
export class ConnectionSignInRoutes implements SignInConnections {
  constructor(private readonly connections: ConnectionsService) {}

  async routeFor(email: string, returnTo: string): Promise<string | undefined> {
    const connection = email.includes('@') ? await this.connections.forAddress(email) : undefined;
    return connection && startPath(connection.id, returnTo);
  }

  async links(returnTo: string): Promise<SignInLink[]> {
    return (await this.connections.all()).map((connection) => ({ name: connection.name, href: startPath(connection.id, returnTo) }));
  }
}

function startPath(connectionId: string, returnTo: string): string {
  return `/login/connections/${connectionId}?return_to=${encodeURIComponent(returnTo)}`;
}

import { Command } from 'nest-commander';
import { PageOptions } from '../../../common/page-options';
import { PageQueryDto } from '../../../common/pagination';
import { printJson, validatedInput } from '../../../common/command-line';
import { ClientsService } from '../clients.service';

/** `client:list`: a page of the registered clients as the admin API lists them (never a secret). */
@Command({ name: 'client:list', description: 'list the registered clients as JSON ({ data, page }), oldest first' })
export class ClientListCommand extends PageOptions {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(_args: string[], options: { limit?: string; offset?: string }): Promise<void> {
    const { limit, offset } = await validatedInput(PageQueryDto, { ...options });
    printJson(await this.clients.list(limit, offset));
  }
}

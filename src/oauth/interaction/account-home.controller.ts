import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { ApiProblems, ApiRedirect } from '../../common/openapi';
import { NoQueryParams } from '../../common/validation';
import { CONNECTED_APPS_PATH } from './connected-apps.controller';
import { sendRedirect } from './pages';

/** Where a person who types the service's address lands: their account (its pages send a signed-out one to sign in). */
@Public()
@Controller()
export class AccountHomeController {
  @Get()
  @ApiRedirect(302, 'To /account')
  @ApiProblems(400)
  home(@Res() res: Response, @NoQueryParams() _query: unknown): void {
    sendRedirect(res, 302, '/account');
  }

  @Get('account')
  @ApiRedirect(302, `To ${CONNECTED_APPS_PATH}, the first account page`)
  @ApiProblems(400)
  account(@Res() res: Response, @NoQueryParams() _query: unknown): void {
    sendRedirect(res, 302, CONNECTED_APPS_PATH);
  }
}

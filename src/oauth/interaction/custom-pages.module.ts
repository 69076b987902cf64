import { type DynamicModule, Module, type Type } from '@nestjs/common';
import { OAuthPages } from './pages';

/** The token under which a team's own {@link OAuthPages} subclass is provided. */
export const CUSTOM_OAUTH_PAGES = Symbol('CUSTOM_OAUTH_PAGES');

/**
 * Replaces the login, consent and error pages: `CustomPagesModule.use(AcmePages)` in the application's imports,
 * where `AcmePages extends OAuthPages`. Global, so that the authorization server finds it wherever it is imported.
 */
@Module({})
export class CustomPagesModule {
  static use(pages: Type<OAuthPages>): DynamicModule {
    return {
      module: CustomPagesModule,
      global: true,
      providers: [{ provide: CUSTOM_OAUTH_PAGES, useClass: pages }],
      exports: [CUSTOM_OAUTH_PAGES],
    };
  }
}

/** OAuthModule's provider of the pages: a team's subclass when one is registered, else the built-in pages. */
export const oauthPagesProvider = {
  provide: OAuthPages,
  inject: [{ token: CUSTOM_OAUTH_PAGES, optional: true }],
  useFactory: (custom?: OAuthPages) => custom ?? new OAuthPages(),
};

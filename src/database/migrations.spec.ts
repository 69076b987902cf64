import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationFolders, unregisteredFeatures } from './migrations';

describe('unregisteredFeatures (the start-up check for features left out)', () => {
  const root = mkdtempSync(join(tmpdir(), 'features-'));
  for (const folder of ['database/migrations', 'oauth/migrations', 'product-reviews/migrations', 'widgets/migrations', 'orders']) {
    mkdirSync(join(root, folder), { recursive: true });
  }
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('finds the folders that hold migrations', () => {
    expect(migrationFolders(root)).toEqual(['database', 'oauth', 'product-reviews', 'widgets']);
  });

  it('names each feature folder with migrations whose module is not registered, matching names without hyphens or case', () => {
    expect(unregisteredFeatures(['AppModule', 'OAuthModule', 'ProductReviewsModule', 'OrdersModule'], root)).toEqual(['widgets']);
    expect(unregisteredFeatures(['OAuthModule'], root)).toEqual(['product-reviews', 'widgets']);
  });

  it('has nothing to say when every such feature is registered; the shared migrations belong to no module', () => {
    expect(unregisteredFeatures(['OAuthModule', 'ProductReviewsModule', 'WidgetsModule'], root)).toEqual([]);
  });

  it("reads this service's own source folders by default (every start of the application runs it with all modules)", () => {
    expect(unregisteredFeatures(['AuditModule', 'AuthModule', 'OAuthModule'])).toContain('users');
    expect(unregisteredFeatures(['AuditModule', 'AuthModule', 'OAuthModule'])).not.toContain('orders');
  });
});

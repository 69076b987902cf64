import type { Application } from 'express';

/** What this needs of a layer of Express's router (router 2.x). */
interface RouterLayer {
  route?: { methods: Record<string, boolean | undefined> };
  match(path: string): unknown;
}

/**
 * The methods the app's routes answer at `path`, upper case and sorted, HEAD wherever GET (Express answers HEAD
 * with the GET route); none when no route matches the path at all. Read from Express's router, so it covers every
 * module's routes without a list kept by hand. For error answers only: it walks every route.
 */
export function allowedMethods(app: Application, path: string): string[] {
  const stack = (app as unknown as { router?: { stack?: RouterLayer[] } }).router?.stack ?? [];
  const methods = new Set<string>();
  for (const layer of stack) {
    if (!layer.route || !layer.match(path)) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (on && method !== '_all') methods.add(method.toUpperCase());
    }
  }
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}

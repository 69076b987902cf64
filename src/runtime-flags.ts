import { setFlagsFromString } from 'node:v8';

/**
 * V8 settings of the server process, set before the application's modules load (main.ts imports this first).
 * `NODE_OPTIONS` takes only an allow-list of V8 flags, which does not include these, so they live here rather than
 * in package.json's `config`; they apply to `npm start`, the image and the bench alike.
 *
 * `--no-allocation-site-pretenuring`: V8 moves an allocation site's objects straight to the old generation once most
 * of them survived a scavenge. On PostgreSQL the driver's objects (a batch, its bound messages, the rows of its
 * answer) and the requests' parameter objects wait for the database's answer across scavenges, so V8 pretenured
 * them, and each then died in the old generation: a full collection every 1.7 s under the code flow instead of
 * every 2-5 s. Without it, those objects die young: 0.96x the CPU per flow and 1.04x the flows/s on the code flow
 * on PostgreSQL (pairs in both orders), the same on SQLite.
 */
setFlagsFromString('--no-allocation-site-pretenuring');

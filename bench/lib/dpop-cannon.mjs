// autocannon with a fresh DPoP proof per request (or, for the comparison, the same request machinery with a bearer
// token): run as a child of the bench, pinned to the client CPU, printing autocannon's JSON result as the CLI does.
import autocannon from 'autocannon';
import { DpopKey } from './dpop.mjs';

const { url, connections, durationSec, timeoutSec, token, privateJwk, scheme } = JSON.parse(process.env.DPOP_CANNON);
const key = scheme === 'dpop' ? new DpopKey(privateJwk) : undefined;
const htu = url.split('?')[0];
const authorization = `${scheme === 'dpop' ? 'DPoP' : 'Bearer'} ${token}`;
const result = await autocannon({
  url,
  connections,
  duration: durationSec,
  timeout: timeoutSec,
  requests: [
    {
      method: 'GET',
      setupRequest: (req) => ({
        ...req,
        headers: { ...req.headers, authorization, ...(key ? { dpop: key.proof('GET', htu, token) } : {}) },
      }),
    },
  ],
});
process.stdout.write(`${JSON.stringify(result)}\n`);

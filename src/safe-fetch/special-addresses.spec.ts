import { describe, expect, it } from 'vitest';
import { HostList, type HostPolicy } from './host-policy';
import { type ResolvedAddress, SafeFetchError, checkedAddresses } from './safe-fetcher';
import { isPublicAddress } from './special-addresses';

const NOT_PUBLIC = [
  ['loopback', ['127.0.0.1', '127.255.255.254', '::1', '[::1]']],
  ['private (RFC 1918)', ['10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1']],
  ['unique local (fc00::/7)', ['fc00::1', 'fd12:3456::1']],
  ['link-local and cloud metadata', ['169.254.0.1', '169.254.169.254', 'fe80::1', 'febf::1']],
  ['CGNAT (100.64/10)', ['100.64.0.1', '100.127.255.255']],
  ['unspecified and this network', ['0.0.0.0', '0.1.2.3', '::']],
  ['multicast and broadcast', ['224.0.0.1', '239.255.255.250', '255.255.255.255', 'ff02::1']],
  ['documentation, benchmarking, reserved', ['192.0.2.1', '198.51.100.1', '203.0.113.1', '198.18.0.1', '240.0.0.1', '2001:db8::1']],
  ['IPv4-mapped IPv6 of those', ['::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe']],
  ['IPv4-compatible, NAT64, 6to4, Teredo', ['::127.0.0.1', '64:ff9b::a00:1', '2002:7f00:1::1', '2001:0:4136:e378::1']],
  ['not an IP address', ['localhost', 'example.com', '', '1.2.3', '::g']],
] as const;

describe('isPublicAddress', () => {
  for (const [kind, addresses] of NOT_PUBLIC) {
    it(`refuses ${kind}`, () => {
      for (const address of addresses) expect(isPublicAddress(address), address).toBe(false);
    });
  }

  it('admits public unicast addresses, IPv4 and IPv6', () => {
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '100.63.255.255',
      '100.128.0.1',
      '172.32.0.1',
      '192.169.0.1',
      '2606:4700::1111',
      '[2a00:1450::1]',
    ]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});

describe('HostList', () => {
  it('matches exact names case-insensitively and *.domain below the domain only', () => {
    const list = new HostList(['Agents.Example.com', '*.corp.example', '10.0.0.5', '::1']);
    expect(list.has('agents.example.com')).toBe(true);
    expect(list.has('AGENTS.example.com.')).toBe(true);
    expect(list.has('x.agents.example.com')).toBe(false);
    expect(list.has('a.corp.example')).toBe(true);
    expect(list.has('a.b.corp.example')).toBe(true);
    expect(list.has('corp.example')).toBe(false);
    expect(list.has('evilcorp.example')).toBe(false);
    expect(list.has('10.0.0.5')).toBe(true);
    expect(list.has('[::1]')).toBe(true);
  });

  it('refuses entries that are no host', () => {
    for (const bad of ['*', '*.', 'a.*.b', 'exa mple.com', '.example.com', 'a..b']) expect(() => new HostList([bad]), bad).toThrow();
  });
});

describe('checkedAddresses', () => {
  const policy = (allowed: string[] = [], denied: string[] = []): HostPolicy => ({
    allowed: new HostList(allowed),
    denied: new HostList(denied),
  });
  const resolving =
    (...addresses: string[]) =>
    async (): Promise<ResolvedAddress[]> =>
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  const reason = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SafeFetchError);
    return (error as SafeFetchError).reason;
  };

  it('checks every address a name resolves to: one private address among public ones refuses the name', async () => {
    await expect(checkedAddresses('agent.example', policy(), resolving('8.8.8.8', '2606:4700::1'))).resolves.toHaveLength(2);
    expect(await reason(checkedAddresses('agent.example', policy(), resolving('8.8.8.8', '10.0.0.1')))).toBe('private-address');
    expect(await reason(checkedAddresses('agent.example', policy(), resolving('2606:4700::1', '::ffff:127.0.0.1')))).toBe(
      'private-address',
    );
  });

  it('checks IP literals without a lookup', async () => {
    const never = async (): Promise<ResolvedAddress[]> => {
      throw new Error('looked up');
    };
    expect(await reason(checkedAddresses('169.254.169.254', policy(), never))).toBe('private-address');
    expect(await reason(checkedAddresses('[fd00::1]', policy(), never))).toBe('private-address');
    await expect(checkedAddresses('8.8.8.8', policy(), never)).resolves.toEqual([{ address: '8.8.8.8', family: 4 }]);
  });

  it('lets a host allowed by name resolve to a private address, refuses other hosts when there is an allow list', async () => {
    const allowed = policy(['agents.corp.example', '*.internal.example']);
    await expect(checkedAddresses('agents.corp.example', allowed, resolving('10.1.2.3'))).resolves.toEqual([
      { address: '10.1.2.3', family: 4 },
    ]);
    await expect(checkedAddresses('a.internal.example', allowed, resolving('fd00::5'))).resolves.toHaveLength(1);
    expect(await reason(checkedAddresses('public.example', allowed, resolving('8.8.8.8')))).toBe('host-not-allowed');
  });

  it('lets a denied host win over everything', async () => {
    expect(
      await reason(checkedAddresses('agents.corp.example', policy(['agents.corp.example'], ['agents.corp.example']), resolving('8.8.8.8'))),
    ).toBe('denied-host');
    expect(await reason(checkedAddresses('x.bad.example', policy([], ['*.bad.example']), resolving('8.8.8.8')))).toBe('denied-host');
  });

  it('refuses a name that does not resolve', async () => {
    expect(await reason(checkedAddresses('nowhere.example', policy(), resolving()))).toBe('unresolvable');
    const failing = async (): Promise<ResolvedAddress[]> => {
      throw new Error('ENOTFOUND');
    };
    expect(await reason(checkedAddresses('nowhere.example', policy(), failing))).toBe('unresolvable');
  });

  it('says "busy", not "does not resolve", when the lookups are all taken (not a failure of that name)', async () => {
    const full = async (): Promise<ResolvedAddress[]> => {
      throw new SafeFetchError('busy', 'too many name lookups at once');
    };
    expect(await reason(checkedAddresses('agent.example', policy(), full))).toBe('busy');
  });
});

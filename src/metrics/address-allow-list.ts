import { BlockList, isIP } from 'node:net';

/**
 * The addresses and networks (`127.0.0.1`, `10.0.0.0/8`, `::1`, `fd00::/8`) let in without a token. IPv4 entries
 * also match IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`), as a dual-stack socket reports IPv4 peers.
 */
export class AddressAllowList {
  private readonly list = new BlockList();

  /** Throws a message naming the bad entry; callers add the variable's name. */
  constructor(readonly entries: readonly string[]) {
    for (const entry of entries) {
      const [address, prefix, ...rest] = entry.split('/');
      const family = isIP(address);
      if (family === 0 || rest.length) throw new Error(`"${entry}" is not an IP address or CIDR network`);
      const type = family === 4 ? 'ipv4' : 'ipv6';
      if (prefix === undefined) {
        this.list.addAddress(address, type);
        continue;
      }
      const bits = Number(prefix);
      if (!/^\d{1,3}$/.test(prefix) || bits > (family === 4 ? 32 : 128)) throw new Error(`"${entry}" has an invalid prefix length`);
      this.list.addSubnet(address, bits, type);
    }
  }

  /** Whether `address` (as a socket reports it) is on the list; false for anything that is not an IP address. */
  admits(address: string | undefined): boolean {
    const family = address === undefined ? 0 : isIP(address);
    if (family === 0) return false;
    return this.list.check(address!, family === 4 ? 'ipv4' : 'ipv6');
  }
}

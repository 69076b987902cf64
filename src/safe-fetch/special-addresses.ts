import { BlockList, isIP } from 'node:net';

/**
 * IPv4 networks that are not the public internet (IANA special-purpose registry, RFC 6890 and successors):
 * this host, private (RFC 1918), shared CGNAT (RFC 6598), loopback, link-local (with the cloud metadata address
 * 169.254.169.254), IETF protocol assignments, documentation, 6to4 relay anycast, benchmarking, multicast,
 * reserved and broadcast.
 */
const IPV4_SPECIAL = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;

/**
 * IPv6 networks that are not the public internet: unspecified and loopback, IPv4-compatible (deprecated),
 * IPv4-mapped and IPv4-translated forms (refused as a whole), NAT64
 * (RFC 6052, RFC 8215), discard-only, IETF protocol assignments (Teredo, ORCHID, benchmarking among them),
 * documentation, 6to4 (it embeds an IPv4 address, possibly a private one), unique local (ULA), link-local,
 * site-local (deprecated) and multicast.
 */
const IPV6_SPECIAL = [
  ['::', 128],
  ['::1', 128],
  ['::', 96],
  ['::ffff:0:0', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['3fff::', 20],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const;

// Two lists: Node's BlockList matches an IPv4 address against IPv6 rules too (as its IPv4-mapped form), which the
// ::ffff:0:0/96 rule would turn into "every IPv4 address".
const specialIpv4 = new BlockList();
for (const [network, prefix] of IPV4_SPECIAL) specialIpv4.addSubnet(network, prefix, 'ipv4');
const specialIpv6 = new BlockList();
for (const [network, prefix] of IPV6_SPECIAL) specialIpv6.addSubnet(network, prefix, 'ipv6');

/**
 * Whether `address` (an IP address as DNS or a URL gives it, IPv6 with or without brackets) is a unicast address of
 * the public internet. Anything else — loopback, private, link-local, CGNAT, unspecified, multicast, documentation,
 * IPv4-mapped IPv6 of any of these, or a string that is no IP address — is not.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return false;
  // IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are refused as a whole: a public server has no reason to be
  // named by one, and whatever it maps to is then never reached through it.
  return family === 4 ? !specialIpv4.check(bare, 'ipv4') : !specialIpv6.check(bare, 'ipv6');
}

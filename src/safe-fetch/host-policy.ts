/**
 * An operator's list of host names: exact names (`agents.example.com`, an IP literal such as `10.0.0.5` or `::1`)
 * or `*.example.com`, which matches every name below `example.com` (not `example.com` itself). Names compare
 * case-insensitively, without a trailing dot.
 */
export class HostList {
  private readonly exact = new Set<string>();
  private readonly suffixes: string[] = [];

  /** Throws a message naming the bad entry; callers add the variable's name. */
  constructor(readonly entries: readonly string[]) {
    for (const raw of entries) {
      const entry = normalHost(raw);
      const name = entry.startsWith('*.') ? entry.slice(2) : entry;
      if (!name || name.includes('*') || !/^[a-z0-9.:_-]+$/.test(name) || name.startsWith('.') || name.includes('..')) {
        throw new Error(`"${raw}" is not a host name, an IP address or *.domain`);
      }
      if (entry.startsWith('*.')) this.suffixes.push(`.${name}`);
      else this.exact.add(name);
    }
  }

  get empty(): boolean {
    return this.entries.length === 0;
  }

  has(host: string): boolean {
    const name = normalHost(host);
    return this.exact.has(name) || this.suffixes.some((suffix) => name.endsWith(suffix));
  }
}

/** A host as lists compare it: lower case, no trailing dot, an IPv6 literal without its brackets. */
function normalHost(host: string): string {
  const lower = host.trim().toLowerCase().replace(/\.$/, '');
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
}

/**
 * Which hosts a fetch may reach. Denied names always lose. With allowed names, only those are reached, and they may
 * resolve to private addresses (how an operator admits its own internal hosts); without, any host whose every
 * address is public is.
 */
export interface HostPolicy {
  allowed: HostList;
  denied: HostList;
}

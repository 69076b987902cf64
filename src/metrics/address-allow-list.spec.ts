import { describe, expect, it } from 'vitest';
import { AddressAllowList } from './address-allow-list';

describe('AddressAllowList', () => {
  it('admits the loopback networks of the default, in IPv4, IPv6 and IPv4-mapped form', () => {
    const list = new AddressAllowList(['127.0.0.1/8', '::1']);
    for (const address of ['127.0.0.1', '127.10.0.3', '::1', '::ffff:127.0.0.1']) expect(list.admits(address), address).toBe(true);
    for (const address of ['128.0.0.1', '10.0.0.1', '::2', '::ffff:10.0.0.1', '0:0:0:0:0:0:0:2']) {
      expect(list.admits(address), address).toBe(false);
    }
  });

  it('matches single addresses exactly and networks by their prefix', () => {
    const list = new AddressAllowList(['192.0.2.7', '10.0.0.0/8', 'fd00::/8']);
    expect(list.admits('192.0.2.7')).toBe(true);
    expect(list.admits('192.0.2.8')).toBe(false);
    expect(list.admits('10.255.1.2')).toBe(true);
    expect(list.admits('11.0.0.1')).toBe(false);
    expect(list.admits('fd12:3456::1')).toBe(true);
    expect(list.admits('fe80::1')).toBe(false);
  });

  it('admits nothing when empty, and never something that is not an address', () => {
    expect(new AddressAllowList([]).admits('127.0.0.1')).toBe(false);
    const all = new AddressAllowList(['0.0.0.0/0', '::/0']);
    expect(all.admits('203.0.113.9')).toBe(true);
    for (const address of [undefined, '', 'localhost', '127.0.0.1/8', '127.0.0.1 '])
      expect(all.admits(address), String(address)).toBe(false);
  });

  it('refuses entries that are not an address or a network with a valid prefix', () => {
    for (const entry of ['localhost', '10.0.0.0/33', '::1/129', '10.0.0.0/', '10.0.0.0/8/8', '10.0.0.0/-1', '10.0.0.0/x', '300.0.0.1']) {
      expect(() => new AddressAllowList([entry]), entry).toThrow(entry);
    }
  });
});

import {
  AndFilter,
  Client,
  type ClientOptions,
  EqualityFilter,
  type Filter,
  InvalidCredentialsError,
  NoSuchObjectError,
  UnwillingToPerformError,
} from 'ldapts';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Slapd } from '../support/slapd';

/**
 * The directory the LDAP sign-in will be tested against: Debian's slapd with its seeded tree (test/support/slapd.ts),
 * read with `ldapts` as the service will read it: the service account looks a person up, the person binds with
 * their password, their groups are read by `member`. No application here: this proves the directory and the client.
 */

let slapd: Slapd;
const clients: Client[] = [];

/** A client of the test's directory, unbound after the test. */
function client(options: Partial<ClientOptions> = {}): Client {
  const made = new Client({ url: slapd.url, ...options });
  clients.push(made);
  return made;
}

const objectClass = (value: string) => new EqualityFilter({ attribute: 'objectClass', value });
const both = (...filters: Filter[]) => new AndFilter({ filters });

/** The service account's lookup of a person by mail, as the sign-in will make it. */
async function findByMail(mail: string): Promise<Record<string, unknown>[]> {
  const reader = client();
  await reader.bind(slapd.serviceDn, slapd.servicePassword);
  const { searchEntries } = await reader.search(slapd.peopleDn, {
    scope: 'sub',
    filter: both(objectClass('inetOrgPerson'), new EqualityFilter({ attribute: 'mail', value: mail })),
    attributes: ['uid', 'mail', 'cn', 'sn'],
  });
  return searchEntries;
}

beforeAll(async () => {
  const started = Date.now();
  slapd = await Slapd.start();
  console.log(`slapd seeded and listening after ${Date.now() - started} ms`);
});

afterEach(async () => {
  slapd.resume();
  for (const made of clients.splice(0)) await made.unbind();
});

afterAll(async () => {
  await slapd?.close();
});

describe('the seeded directory, read with ldapts', () => {
  it('the service account finds a person by mail, and reads no password', async () => {
    const bob = slapd.person('bob');
    expect(await findByMail(bob.mail)).toEqual([{ dn: bob.dn, uid: 'bob', mail: 'bob@example.com', cn: 'Bob Staff', sn: 'Staff' }]);

    const reader = client();
    await reader.bind(slapd.serviceDn, slapd.servicePassword);
    const { searchEntries } = await reader.search(bob.dn, { scope: 'base', attributes: ['userPassword'] });
    // ldapts lists each requested attribute; the directory sent no value for it.
    expect(searchEntries).toEqual([{ dn: bob.dn, userPassword: [] }]);
  });

  it('an anonymous client reads nothing, not even that the people exist', async () => {
    const error = await client()
      .search(slapd.peopleDn, { scope: 'sub', filter: objectClass('inetOrgPerson') })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(NoSuchObjectError);
    expect((error as NoSuchObjectError).code).toBe(32);
  });

  it('a person binds with their password and reads their own entry', async () => {
    const alice = slapd.person('alice');
    const own = client();
    await own.bind(alice.dn, alice.password);
    const { searchEntries } = await own.search(alice.dn, { scope: 'base', attributes: ['uid', 'mail'] });
    expect(searchEntries).toEqual([{ dn: alice.dn, uid: 'alice', mail: 'alice@example.com' }]);
  });

  it('a wrong password, another person’s password and an unknown DN are refused as invalid credentials', async () => {
    const alice = slapd.person('alice');
    const attempts: [string, string][] = [
      [alice.dn, `${alice.password}x`],
      [alice.dn, slapd.person('bob').password],
      [`uid=nobody,${slapd.peopleDn}`, alice.password],
    ];
    for (const [dn, password] of attempts) {
      const error = await client()
        .bind(dn, password)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(InvalidCredentialsError);
      expect((error as InvalidCredentialsError).code).toBe(49);
    }
  });

  it('an empty password is no sign-in: slapd refuses the unauthenticated bind (RFC 4513 5.1.2)', async () => {
    const error = await client()
      .bind(slapd.person('alice').dn, '')
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(UnwillingToPerformError);
    expect((error as UnwillingToPerformError).code).toBe(53);
  });

  it('StartTLS with the directory’s CA, then a bind; without the CA the certificate is refused', async () => {
    const alice = slapd.person('alice');
    const secured = client();
    // ldapts hands these options to tls.connect as they are: without `host` the name checked is "localhost".
    await secured.startTLS({ ca: [slapd.caCertificate], host: '127.0.0.1' });
    await secured.bind(alice.dn, alice.password);

    const error = await client()
      .startTLS({ host: '127.0.0.1' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Error);
    expect((error as NodeJS.ErrnoException).code).toBe('SELF_SIGNED_CERT_IN_CHAIN');
  });

  it('a person’s groups are the groupOfNames that name their DN as member', async () => {
    const reader = client();
    await reader.bind(slapd.serviceDn, slapd.servicePassword);
    const groupsOf = async (uid: string) => {
      const member = new EqualityFilter({ attribute: 'member', value: slapd.person(uid).dn });
      const { searchEntries } = await reader.search(slapd.groupsDn, {
        scope: 'one',
        filter: both(objectClass('groupOfNames'), member),
        attributes: ['cn'],
      });
      return searchEntries.map((entry) => entry.cn).sort();
    };
    expect(await groupsOf('alice')).toEqual(['admins', 'staff']);
    expect(await groupsOf('bob')).toEqual(['staff']);
    expect(await groupsOf('carol')).toEqual([]);
  });

  it('a mail value that tries to widen the filter is escaped and finds nobody', async () => {
    const injection = '*)(uid=*';
    expect(new EqualityFilter({ attribute: 'mail', value: injection }).toString()).toBe('(mail=\\2a\\29\\28uid=\\2a)');
    expect(await findByMail(injection)).toEqual([]);
    expect(await findByMail('*')).toEqual([]);

    // The same value pasted into a filter string would have matched every person.
    const reader = client();
    await reader.bind(slapd.serviceDn, slapd.servicePassword);
    const pasted = await reader.search(slapd.peopleDn, {
      scope: 'sub',
      filter: `(&(objectClass=inetOrgPerson)(mail=${injection}))`,
      attributes: ['uid'],
    });
    expect(pasted.searchEntries.map((entry) => entry.uid).sort()).toEqual(['alice', 'bob', 'carol']);
  });
});

describe('a directory that hangs', () => {
  it('a client with a 1 s timeout fails with a timeout instead of waiting, and binds again once it answers', async () => {
    const alice = slapd.person('alice');
    await slapd.pause();
    const started = Date.now();
    const error = await client({ timeout: 1000 })
      .bind(alice.dn, alice.password)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    console.log(`bind to the paused directory failed after ${Date.now() - started} ms`);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe('BindRequest: Operation timed out');

    slapd.resume();
    await client({ timeout: 1000 }).bind(alice.dn, alice.password);
  });
});

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepts, onServerPort } from './service-process';

/** A seeded person of the directory, with the password they bind with (the directory holds only its hash). */
export interface LdapPerson {
  uid: string;
  dn: string;
  cn: string;
  sn: string;
  mail: string;
  password: string;
}

const BASE_DN = 'dc=example,dc=com';
const PEOPLE_DN = `ou=people,${BASE_DN}`;
const GROUPS_DN = `ou=groups,${BASE_DN}`;
/** Debian's schema files (package slapd): inetOrgPerson needs cosine, posixGroup and the like are nis's. */
const SCHEMAS = ['core', 'cosine', 'inetorgperson', 'nis'].map((name) => `/etc/ldap/schema/${name}.schema`);
/** Debian builds the backends as modules: mdb is loaded from here. */
const MODULE_PATH = '/usr/lib/ldap';
/** Debian's binaries, by path: /usr/sbin is not on every user's PATH. */
const SLAPD = '/usr/sbin/slapd';
const SLAPADD = '/usr/sbin/slapadd';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secret = () => randomBytes(18).toString('base64url');

/** RFC 2307 `{SSHA}`: base64 of SHA-1(password + salt) then the salt, what `slappasswd` writes by default. */
function ssha(password: string): string {
  const salt = randomBytes(8);
  const digest = createHash('sha1').update(password).update(salt).digest();
  return `{SSHA}${Buffer.concat([digest, salt]).toString('base64')}`;
}

/** A CA and a server certificate for 127.0.0.1 signed by it (P-256, a day), made with `openssl` into `dir`. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-noenc'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=Test directory CA');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  const serial = `0x${randomBytes(8).toString('hex')}`;
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    serial,
    '-days',
    '1',
    '-extfile',
    'server.ext',
    '-out',
    'server.pem',
  );
}

/**
 * The configuration (slapd.conf, read with `-f`): one mdb database for {@link BASE_DN}. Only the service account
 * reads the tree (never a password); a person reads their own entry; anyone may bind (`auth`), nobody else reads.
 */
function config(dir: string, rootDn: string, rootPassword: string, serviceDn: string): string {
  return [
    ...SCHEMAS.map((file) => `include ${file}`),
    `modulepath ${MODULE_PATH}`,
    'moduleload back_mdb',
    `pidfile ${join(dir, 'slapd.pid')}`,
    `TLSCACertificateFile ${join(dir, 'ca.pem')}`,
    `TLSCertificateFile ${join(dir, 'server.pem')}`,
    `TLSCertificateKeyFile ${join(dir, 'server.key')}`,
    'database mdb',
    'maxsize 16777216',
    `suffix "${BASE_DN}"`,
    `rootdn "${rootDn}"`,
    `rootpw ${ssha(rootPassword)}`,
    `directory ${join(dir, 'data')}`,
    'access to attrs=userPassword by anonymous auth by * none',
    `access to * by dn.exact="${serviceDn}" read by self read by * none`,
    '',
  ].join('\n');
}

/** The seeded tree: the people, the groups `admins` (alice) and `staff` (alice, bob), and the service account. */
function seed(people: LdapPerson[], serviceDn: string, servicePassword: string): string {
  const entry = (lines: string[]) => `${lines.join('\n')}\n`;
  const [alice, bob] = people;
  return [
    entry([`dn: ${BASE_DN}`, 'objectClass: dcObject', 'objectClass: organization', 'dc: example', 'o: Example']),
    entry([`dn: ${PEOPLE_DN}`, 'objectClass: organizationalUnit', 'ou: people']),
    entry([`dn: ${GROUPS_DN}`, 'objectClass: organizationalUnit', 'ou: groups']),
    entry([
      `dn: ${serviceDn}`,
      'objectClass: organizationalRole',
      'objectClass: simpleSecurityObject',
      'cn: reader',
      `userPassword: ${ssha(servicePassword)}`,
    ]),
    ...people.map((p) =>
      entry([
        `dn: ${p.dn}`,
        'objectClass: inetOrgPerson',
        `uid: ${p.uid}`,
        `cn: ${p.cn}`,
        `sn: ${p.sn}`,
        `mail: ${p.mail}`,
        `userPassword: ${ssha(p.password)}`,
      ]),
    ),
    entry([`dn: cn=admins,${GROUPS_DN}`, 'objectClass: groupOfNames', 'cn: admins', `member: ${alice.dn}`]),
    entry([`dn: cn=staff,${GROUPS_DN}`, 'objectClass: groupOfNames', 'cn: staff', `member: ${alice.dn}`, `member: ${bob.dn}`]),
  ].join('\n');
}

/**
 * Debian's OpenLDAP `slapd` (apt-get install slapd), private to a test file: its own temporary directory,
 * configuration and seeded tree (see {@link seed}), listening only on ldap://127.0.0.1 on a free port, StartTLS
 * with a certificate of its own CA ({@link caCertificate}). Runs as the current user; the passwords are drawn at start.
 */
export class Slapd {
  readonly baseDn = BASE_DN;
  readonly peopleDn = PEOPLE_DN;
  readonly groupsDn = GROUPS_DN;
  readonly serviceDn = `cn=reader,${BASE_DN}`;
  readonly servicePassword = secret();
  readonly rootDn = `cn=admin,${BASE_DN}`;
  readonly rootPassword = secret();
  readonly people: LdapPerson[];
  /** The CA that signed the server's certificate (PEM), for a client's StartTLS `ca`. */
  readonly caCertificate: string;
  private child?: ChildProcess;
  private out = '';
  private port = 0;

  private constructor(private readonly dir: string) {
    const person = (uid: string, cn: string, sn: string): LdapPerson => ({
      uid,
      dn: `uid=${uid},${PEOPLE_DN}`,
      cn,
      sn,
      mail: `${uid}@example.com`,
      password: secret(),
    });
    this.people = [
      person('alice', 'Alice Admin', 'Admin'),
      person('bob', 'Bob Staff', 'Staff'),
      person('carol', 'Carol Nogroup', 'Nogroup'),
    ];
    makeCertificates(dir);
    this.caCertificate = readFileSync(join(dir, 'ca.pem'), 'utf8');
    const conf = join(dir, 'slapd.conf');
    writeFileSync(conf, config(dir, this.rootDn, this.rootPassword, this.serviceDn));
    writeFileSync(join(dir, 'seed.ldif'), seed(this.people, this.serviceDn, this.servicePassword));
    mkdirSync(join(dir, 'data'));
    // Loaded offline, before the server starts: it starts with the tree in place.
    execFileSync(SLAPADD, ['-f', conf, '-l', join(dir, 'seed.ldif')], { stdio: 'pipe' });
  }

  get url(): string {
    return `ldap://127.0.0.1:${this.port}`;
  }

  /** A seeded person by uid (alice, bob or carol). */
  person(uid: string): LdapPerson {
    const found = this.people.find((p) => p.uid === uid);
    if (!found) throw new Error(`no seeded person ${uid}`);
    return found;
  }

  /** slapd's own output so far (`-d none`: its start, errors and stop). */
  output(): string {
    return this.out;
  }

  /** Seeds a new directory and starts slapd on a free port (another one when that port was taken meanwhile). */
  static async start(): Promise<Slapd> {
    const dir = mkdtempSync(join(tmpdir(), 'slapd-'));
    try {
      const slapd = new Slapd(dir);
      await onServerPort((port) => slapd.listen(port));
      return slapd;
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  private async listen(port: number): Promise<void> {
    this.out = '';
    // -d none: stays in the foreground and writes only its start, its errors and its stop to stderr.
    const child = spawn(SLAPD, ['-f', join(this.dir, 'slapd.conf'), '-h', `ldap://127.0.0.1:${port}/`, '-d', 'none'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (d: Buffer) => (this.out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (this.out += d.toString()));
    const spawned = await new Promise<Error | undefined>((resolve) => {
      child.once('spawn', () => resolve(undefined));
      child.once('error', resolve);
    });
    if (spawned) throw new Error(`slapd could not be run (apt-get install slapd): ${spawned.message}`);
    const deadline = Date.now() + 30_000;
    while (child.exitCode === null && !(await accepts(port))) {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`slapd did not listen within 30 s:\n${this.out}`);
      }
      await sleep(20);
    }
    // A port taken meanwhile: "bind(6) failed errno=98 (Address already in use)", which onServerPort draws again for.
    if (child.exitCode !== null) throw new Error(`slapd exited at start:\n${this.out}`);
    this.child = child;
    this.port = port;
  }

  /** The directory hangs: slapd stops (SIGSTOP); the kernel still accepts connections, nothing answers. */
  /** Stops the server's every thread (SIGSTOP), and returns once the kernel shows them all stopped. */
  async pause(): Promise<void> {
    const pid = this.child?.pid;
    this.child?.kill('SIGSTOP');
    if (pid === undefined) return;
    const stopped = () =>
      readdirSync(`/proc/${pid}/task`).every((task) => /^\d+ \(.*\) [Tt] /.test(readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8')));
    while (!stopped()) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** Stops slapd (resumed first if paused), waits for it to exit and removes its directory. */
  async close(): Promise<void> {
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../src/config';
import { parseOpenSshPublicKey, parseSftpUrl } from '../src/achSettings';
import { deliverFile, downloadInbound, listInbound, SftpError, sftpTargetOf } from '../src/ach/sftp';
import { listenToAchWindowSteps } from '../src/ach/steps';
import { startSftpServer, type SftpServer } from './support/sftpServer';

let server: SftpServer;

beforeAll(async () => {
  server = await startSftpServer();
});

afterAll(async () => {
  await server.stop();
});

function outbound(): string[] {
  return fs.readdirSync(path.join(server.root, 'outbound')).sort();
}

async function untilTrue(check: () => boolean, deadlineMs: number, what: string): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** A promise and its resolve, for a test to hold a step until it lets it go. */
function gate(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => undefined as void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

function expectSftpError(code: SftpError['code'], retryable: boolean): jest.AsymmetricMatcher {
  return expect.objectContaining({ name: 'SftpError', code, retryable }) as jest.AsymmetricMatcher;
}

describe('SPEC §24 delivery over SFTP to a real OpenSSH server', () => {
  afterEach(() => {
    for (const name of fs.readdirSync(path.join(server.root, 'outbound'))) fs.rmSync(path.join(server.root, 'outbound', name));
  });

  test('a file goes to outbound/ whole under its name, and delivering it again is a delivery already done', async () => {
    const bytes = Buffer.from('101 091000019 1234567892611271030A094101\n'.repeat(50));
    const first = await deliverFile(server.target(), 'ACH-20261127-A.ach', bytes);
    expect(first).toMatchObject({ outcome: 'delivered', bytes: bytes.length, path: `${server.root}/outbound/ACH-20261127-A.ach` });
    expect(outbound()).toEqual(['ACH-20261127-A.ach']);
    expect(fs.readFileSync(path.join(server.root, 'outbound', 'ACH-20261127-A.ach')).equals(bytes)).toBe(true);
    const again = await deliverFile(server.target(), 'ACH-20261127-A.ach', bytes);
    expect(again).toMatchObject({ outcome: 'already_delivered', sha256: first.sha256 });
    expect(outbound()).toEqual(['ACH-20261127-A.ach']);
  });

  test('a name that already holds other bytes is refused, never overwritten', async () => {
    await deliverFile(server.target(), 'ACH-B.ach', Buffer.from('one\n'));
    await expect(deliverFile(server.target(), 'ACH-B.ach', Buffer.from('two\n'))).rejects.toEqual(
      expectSftpError('sftp_name_taken', false),
    );
    expect(fs.readFileSync(path.join(server.root, 'outbound', 'ACH-B.ach'), 'utf8')).toBe('one\n');
  });

  test('a half-uploaded temporary file from an earlier attempt is replaced', async () => {
    const bytes = randomBytes(200_000);
    server.writeFile('outbound/.ACH-C.ach.part', randomBytes(300_000));
    await deliverFile(server.target(), 'ACH-C.ach', bytes);
    expect(outbound()).toEqual(['ACH-C.ach']);
    expect(fs.readFileSync(path.join(server.root, 'outbound', 'ACH-C.ach')).equals(bytes)).toBe(true);
  });

  test('two attempts at once (a worker presumed dead that is not): the bank never sees a partial file, and no temporary file is left', async () => {
    // A stops with its temporary file whole, before its rename; B starts and stops halfway through its upload;
    // then A goes on. With one temporary name for both, B had truncated A's file and A renamed half a file.
    const bytes = randomBytes(4 * 1024 * 1024);
    const gates = { a: gate(), b: gate() };
    const reached = { aAtRename: gate(), bAtUpload: gate() };
    let uploads = 0;
    listenToAchWindowSteps((step) => {
      if (step === 'rename' && uploads === 1) {
        reached.aAtRename.resolve();
        return gates.a.promise;
      }
      if (step === 'upload' && ++uploads === 2) {
        reached.bAtUpload.resolve();
        return gates.b.promise;
      }
      return Promise.resolve();
    });
    try {
      const a = deliverFile(server.target(), 'ACH-R.ach', bytes);
      a.catch(() => undefined);
      await reached.aAtRename.promise;
      const b = deliverFile(server.target(), 'ACH-R.ach', bytes);
      b.catch(() => undefined);
      await reached.bAtUpload.promise;
      gates.a.resolve();
      await a.then(
        () => undefined,
        (error: unknown) => expect(error).toEqual(expectSftpError('sftp_failed', true)),
      );
      const final = path.join(server.root, 'outbound', 'ACH-R.ach');
      if (fs.existsSync(final)) expect(fs.readFileSync(final).equals(bytes)).toBe(true);
      gates.b.resolve();
      await expect(b).resolves.toMatchObject({ outcome: expect.stringMatching(/^(already_)?delivered$/) });
      expect(fs.readFileSync(final).equals(bytes)).toBe(true);
      expect(outbound()).toEqual(['ACH-R.ach']);
    } finally {
      listenToAchWindowSteps(null);
      gates.a.resolve();
      gates.b.resolve();
    }
  });

  test('sshd killed mid-upload: the attempt fails retryably with no file under the final name; the retry after the restart delivers it whole, once', async () => {
    const bytes = randomBytes(48 * 1024 * 1024);
    const parts = () => outbound().filter((name) => /^\.ACH-D\.ach\.[0-9a-f]{12}\.part$/.test(name));
    const partSize = () => fs.statSync(path.join(server.root, 'outbound', parts()[0]!)).size;
    const attempt = deliverFile(server.target(), 'ACH-D.ach', bytes);
    attempt.catch(() => undefined);
    await untilTrue(() => parts().length === 1 && partSize() > 1024 * 1024, 60_000, 'the upload reaching 1 MiB');
    server.kill();
    await expect(attempt).rejects.toEqual(expectSftpError('sftp_unreachable', true));
    expect(partSize()).toBeLessThan(bytes.length);
    expect(outbound()).toEqual(parts());
    await expect(deliverFile(server.target(), 'ACH-D.ach', bytes)).rejects.toEqual(expectSftpError('sftp_unreachable', true));
    await server.start();
    await expect(deliverFile(server.target(), 'ACH-D.ach', bytes)).resolves.toMatchObject({ outcome: 'delivered' });
    expect(outbound()).toEqual(['ACH-D.ach']);
    expect(fs.readFileSync(path.join(server.root, 'outbound', 'ACH-D.ach')).equals(bytes)).toBe(true);
  });

  test('a login the server refuses is a clear, retryable error; the retry after the bank enrols the key succeeds', async () => {
    const stranger = server.target({ privateKey: fs.readFileSync(server.strangerKeyFile) });
    const refused = deliverFile(stranger, 'ACH-E.ach', Buffer.from('e\n'));
    await expect(refused).rejects.toEqual(expectSftpError('sftp_login_refused', true));
    await expect(refused).rejects.toThrow(`the SFTP server ${server.user}@127.0.0.1:${server.port} refused the login`);
    server.allowKey(`${server.strangerKeyFile}.pub`);
    await expect(deliverFile(stranger, 'ACH-E.ach', Buffer.from('e\n'))).resolves.toMatchObject({ outcome: 'delivered' });
  });

  test('an unwritable outbound directory is a clear error naming the path', async () => {
    const dir = path.join(server.root, 'outbound');
    fs.chmodSync(dir, 0o555);
    try {
      const refused = deliverFile(server.target(), 'ACH-F.ach', Buffer.from('f\n'));
      await expect(refused).rejects.toEqual(expectSftpError('sftp_permission_denied', true));
      await expect(refused).rejects.toThrow(
        new RegExp(`^the SFTP server refused to write ${dir}/\\.ACH-F\\.ach\\.[0-9a-f]{12}\\.part: permission denied$`),
      );
    } finally {
      fs.chmodSync(dir, 0o755);
    }
    expect(outbound()).toEqual([]);
  });

  test('a server whose host key is not the pinned one is refused before anything is sent, and not retried', async () => {
    const wrongKey = fs.readFileSync(`${server.clientKeyFile}.pub`, 'utf8');
    const refused = deliverFile(server.target({ hostKey: wrongKey }), 'ACH-G.ach', Buffer.from('g\n'));
    await expect(refused).rejects.toEqual(expectSftpError('sftp_host_key_mismatch', false));
    expect(outbound()).toEqual([]);
  });
});

describe('SPEC §25 return files are listed and read from inbound/', () => {
  test('lists the regular files oldest first and downloads one byte for byte', async () => {
    const inbound = path.join(server.root, 'inbound');
    fs.writeFileSync(path.join(inbound, 'RET-2.ach'), 'second\n');
    fs.utimesSync(path.join(inbound, 'RET-2.ach'), new Date('2026-11-27T12:00:00Z'), new Date('2026-11-27T12:00:00Z'));
    fs.writeFileSync(path.join(inbound, 'RET-1.ach'), 'first\n');
    fs.utimesSync(path.join(inbound, 'RET-1.ach'), new Date('2026-11-27T11:00:00Z'), new Date('2026-11-27T11:00:00Z'));
    fs.writeFileSync(path.join(inbound, '.RET-3.ach.part'), 'still arriving\n');
    fs.mkdirSync(path.join(inbound, 'archive'), { recursive: true });
    const files = await listInbound(server.target());
    expect(files).toEqual([
      { name: 'RET-1.ach', bytes: 6, modifiedAt: new Date('2026-11-27T11:00:00Z') },
      { name: 'RET-2.ach', bytes: 7, modifiedAt: new Date('2026-11-27T12:00:00Z') },
    ]);
    expect((await downloadInbound(server.target(), 'RET-2.ach')).toString()).toBe('second\n');
    await expect(downloadInbound(server.target(), 'RET-9.ach')).rejects.toThrow(`${inbound}/RET-9.ach does not exist`);
    await expect(downloadInbound(server.target(), '../outbound/x')).rejects.toThrow(/file name/);
  });
});

describe('SPEC §24 SFTP settings', () => {
  test('an sftp:// address gives user, host, port and directory', () => {
    expect(parseSftpUrl('sftp://acme@sftp.bank.example:2222/upload/acme')).toEqual({
      host: 'sftp.bank.example',
      port: 2222,
      username: 'acme',
      directory: '/upload/acme',
    });
    expect(parseSftpUrl('sftp://acme@sftp.bank.example').port).toBe(22);
    expect(() => parseSftpUrl('https://acme@bank.example/')).toThrow(/sftp:\/\/user@host/);
    expect(() => parseSftpUrl('sftp://acme:secret@bank.example/')).toThrow(/no password/);
  });

  test('a pinned host key is an OpenSSH public key line whose blob names its type', () => {
    expect(parseOpenSshPublicKey(server.hostKeyLine).type).toBe('ssh-ed25519');
    expect(() => parseOpenSshPublicKey('ssh-rsa ' + server.hostKeyLine.split(' ')[1]!)).toThrow(/does not hold a ssh-rsa key/);
    expect(() => parseOpenSshPublicKey('AAAA')).toThrow(/OpenSSH form/);
  });

  test('the ACH variables are checked at start, naming the variable', () => {
    const bank = {
      ACH_ODFI_ROUTING: '091000019',
      ACH_IMMEDIATE_ORIGIN: '123456789',
      ACH_ODFI_NAME: 'WELLS FARGO BANK',
      ACH_ORIGIN_NAME: 'PAYMENTS LEDGER',
      ...server.achEnv(),
    };
    const config = loadConfig(bank);
    expect(config.ACH_IMMEDIATE_ORIGIN).toBe(' 123456789');
    expect(config.ACH_WINDOWS).toEqual([
      { window: '10:30', settlement: '13:00' },
      { window: '14:45', settlement: '17:00' },
      { window: '16:45', settlement: '18:00' },
    ]);
    expect(sftpTargetOf(config)).toMatchObject({ host: '127.0.0.1', port: server.port, username: server.user, directory: server.root });
    expect(sftpTargetOf(loadConfig({}))).toBeNull();
    expect(loadConfig({ ACH_WINDOWS: '09:00=12:00,16:45' }).ACH_WINDOWS).toEqual([
      { window: '09:00', settlement: '12:00' },
      { window: '16:45', settlement: '18:00' },
    ]);
    for (const [name, value, message] of [
      ['ACH_ODFI_ROUTING', '091000018', /ACH_ODFI_ROUTING.*check digit/],
      ['ACH_IMMEDIATE_ORIGIN', '12345', /ACH_IMMEDIATE_ORIGIN.*10 characters/],
      ['ACH_ODFI_NAME', 'A BANK WITH A NAME LONGER THAN 23', /ACH_ODFI_NAME/],
      ['ACH_SFTP_URL', 'ftp://bank.example/x', /ACH_SFTP_URL.*sftp:\/\/user@host/],
      ['ACH_SFTP_KEY_FILE', '/nonexistent/key', /ACH_SFTP_KEY_FILE.*readable private key/],
      ['ACH_SFTP_HOST_KEY', 'ssh-ed25519 not-base64!', /ACH_SFTP_HOST_KEY.*OpenSSH form/],
      ['ACH_WINDOWS', '11:00', /ACH_WINDOWS.*HH:MM=HH:MM/],
      ['ACH_WINDOWS', '14:45,10:30', /ACH_WINDOWS.*order of the day/],
    ] as const) {
      expect(() => loadConfig({ ...bank, [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig({ ...bank, [name]: value })).toThrow(message);
    }
    expect(() => loadConfig({ ACH_SFTP_URL: server.url })).toThrow(/ACH_SFTP_KEY_FILE.*must be set with ACH_SFTP_URL/);
    expect(() => loadConfig({ ACH_ODFI_ROUTING: '091000019' })).toThrow(/ACH_ODFI_NAME.*must be set with ACH_ODFI_ROUTING/);
  });
});

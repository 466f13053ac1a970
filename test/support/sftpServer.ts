import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { SftpTarget } from '../../src/ach/sftp';
import { freePort } from './ports';

/**
 * A real OpenSSH server for the SFTP tests (SPEC §24 delivery, §25 returns): `/usr/sbin/sshd -D -e` with its
 * own config, a generated ed25519 host key, key-only login for one user and the sftp subsystem only, on a
 * free port of 127.0.0.1. The session runs as `nobody` (when we are root, as in CI) so that file permissions
 * bite: an unwritable directory is unwritable. .ci/run installs openssh-server.
 */
export interface SftpServer {
  port: number;
  user: string;
  /** The directory the URL names, holding outbound/ and inbound/, on this machine's disk. */
  root: string;
  url: string;
  clientKeyFile: string;
  /** The host key's public line, what ACH_SFTP_HOST_KEY pins. */
  hostKeyLine: string;
  /** The service's three settings for this server (SPEC §24): ACH_SFTP_URL, ACH_SFTP_KEY_FILE, ACH_SFTP_HOST_KEY. */
  achEnv(): Record<string, string>;
  target(overrides?: Partial<SftpTarget>): SftpTarget;
  /** A second client key the server does not accept (until allowKey). */
  strangerKeyFile: string;
  allowKey(publicKeyFile: string): void;
  /** Writes a file under root as the SFTP user would have (owned by that user), whole: a reader never sees part of it. */
  writeFile(relativePath: string, bytes: Buffer | string): void;
  /** Refuses every login (an empty authorized_keys) until called again with false. */
  refuseLogins(refuse: boolean): void;
  /** Makes a directory under root unwritable for the SFTP user, or writable again. */
  setWritable(relativePath: string, writable: boolean): void;
  /** Starts sshd (again); resolves when it accepts connections. */
  start(): Promise<void>;
  /** SIGKILLs sshd and every session process under it, as a crash would. */
  kill(): void;
  stop(): Promise<void>;
}

const SSHD = '/usr/sbin/sshd';

function keygen(file: string): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', path.basename(file), '-f', file]);
}

function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (after the parenthesised command, which may hold spaces) is the parent pid.
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === pid) children.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

function killTree(pid: number): void {
  for (const child of childrenOf(pid)) killTree(child);
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

async function untilListening(port: number, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => resolve(true));
      socket.once('error', () => resolve(false));
      socket.once('connect', () => socket.destroy());
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`sshd did not listen on 127.0.0.1:${port} within ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function writeConfig(dir: string, port: number, user: string): string {
  const config = path.join(dir, 'sshd_config');
  fs.writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${dir}/host_key`,
      'PidFile none',
      `AuthorizedKeysFile ${dir}/authorized_keys`,
      'AuthenticationMethods publickey',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      // The scratch directory is under /tmp; sshd's ownership checks are for home directories.
      'StrictModes no',
      `AllowUsers ${user}`,
      'PermitRootLogin prohibit-password',
      'Subsystem sftp internal-sftp',
      'ForceCommand internal-sftp',
      '',
    ].join('\n'),
  );
  return config;
}

export async function startSftpServer(): Promise<SftpServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sftp-'));
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync('/run/sshd', { recursive: true });
  for (const key of ['host_key', 'client_key', 'stranger_key']) keygen(path.join(dir, key));
  fs.copyFileSync(path.join(dir, 'client_key.pub'), path.join(dir, 'authorized_keys'));
  fs.chmodSync(path.join(dir, 'authorized_keys'), 0o644);
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? 'nobody' : os.userInfo().username;
  const root = path.join(dir, 'bank');
  for (const sub of ['outbound', 'inbound']) fs.mkdirSync(path.join(root, sub), { recursive: true });
  if (asRoot) execFileSync('chown', ['-R', 'nobody:', root]);
  const port = await freePort();
  const config = writeConfig(dir, port, user);
  const hostKeyLine = fs.readFileSync(path.join(dir, 'host_key.pub'), 'utf8').trim();
  let sshd: ChildProcess | undefined;
  let writes = 0;
  /** authorized_keys while logins are refused. */
  let allowed: Buffer | undefined;
  const logFile = path.join(dir, 'sshd.log');
  const server: SftpServer = {
    port,
    user,
    root,
    url: `sftp://${user}@127.0.0.1:${port}${root}`,
    clientKeyFile: path.join(dir, 'client_key'),
    strangerKeyFile: path.join(dir, 'stranger_key'),
    hostKeyLine,
    achEnv: () => ({ ACH_SFTP_URL: server.url, ACH_SFTP_KEY_FILE: server.clientKeyFile, ACH_SFTP_HOST_KEY: hostKeyLine }),
    target: (overrides = {}) => ({
      host: '127.0.0.1',
      port,
      username: user,
      directory: root,
      privateKey: fs.readFileSync(path.join(dir, 'client_key')),
      hostKey: hostKeyLine,
      ...overrides,
    }),
    allowKey: (publicKeyFile) => fs.appendFileSync(path.join(dir, 'authorized_keys'), fs.readFileSync(publicKeyFile)),
    writeFile: (relativePath, bytes) => {
      // Written beside root, then renamed into place (one filesystem): the rename is atomic.
      const partial = path.join(dir, `writing-${process.pid}-${(writes += 1)}`);
      fs.writeFileSync(partial, bytes);
      if (asRoot) execFileSync('chown', ['nobody:', partial]);
      fs.renameSync(partial, path.join(root, relativePath));
    },
    refuseLogins: (refuse) => {
      const keys = path.join(dir, 'authorized_keys');
      if (refuse && allowed === undefined) {
        allowed = fs.readFileSync(keys);
        fs.writeFileSync(keys, '');
      } else if (!refuse && allowed !== undefined) {
        fs.writeFileSync(keys, allowed);
        allowed = undefined;
      }
    },
    setWritable: (relativePath, writable) => fs.chmodSync(path.join(root, relativePath), writable ? 0o755 : 0o555),
    async start() {
      const log = fs.openSync(logFile, 'a');
      sshd = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', log, log] });
      fs.closeSync(log);
      await untilListening(port, 10_000);
    },
    kill() {
      if (sshd?.pid !== undefined) killTree(sshd.pid);
      sshd = undefined;
    },
    async stop() {
      server.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Client, type ConnectConfig, type SFTPWrapper } from 'ssh2';
import { parseOpenSshPublicKey, parseSftpUrl, type SftpAddress } from '../achSettings';
import { achWindowStep } from './steps';

/**
 * Delivery of NACHA files to the ODFI over SFTP (SPEC §24) and the reading of its return files (SPEC §25).
 * One call is one attempt on one connection; the caller (a Temporal activity) retries durably with backoff,
 * and a retry is safe: a file goes up under a temporary name and is renamed only once whole, and a final name
 * that already holds the same bytes is a delivery already done.
 */

export interface SftpTarget extends SftpAddress {
  privateKey: Buffer;
  /** The server's public host key in OpenSSH form (`ssh-ed25519 AAAA…`), as in a known_hosts line. */
  hostKey: string;
}

export const SFTP_LIMITS = {
  connectTimeoutMs: 20_000,
  /** A stalled server is given up on after keepaliveIntervalMs × keepaliveCountMax. */
  keepaliveIntervalMs: 5_000,
  keepaliveCountMax: 3,
  /** One whole attempt: connect, check, upload, rename. */
  attemptTimeoutMs: 10 * 60_000,
  /** What OpenSSH's own sftp client uses (-B 32768 -R 64): 2 MiB in flight. */
  writeChunkBytes: 32_768,
  writesInFlightMax: 64,
  /** A return file is a day's returns at most; a larger one is not the bank's. */
  inboundFileBytesMax: 256 * 1024 * 1024,
  inboundFilesListedMax: 10_000,
} as const;

export type SftpErrorCode =
  'sftp_unreachable' | 'sftp_host_key_mismatch' | 'sftp_login_refused' | 'sftp_permission_denied' | 'sftp_name_taken' | 'sftp_failed';

/** What went wrong, for a person and for the retry policy: a server that is not the bank's is never retried. */
export class SftpError extends Error {
  override name = 'SftpError';
  constructor(
    readonly code: SftpErrorCode,
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
  }
}

/** The bank's server as configured (ACH_SFTP_URL, ACH_SFTP_KEY_FILE, ACH_SFTP_HOST_KEY), or null when delivery is off. */
export function sftpTargetOf(config: { ACH_SFTP_URL?: string; ACH_SFTP_KEY_FILE?: string; ACH_SFTP_HOST_KEY?: string }): SftpTarget | null {
  if (!config.ACH_SFTP_URL || !config.ACH_SFTP_KEY_FILE || !config.ACH_SFTP_HOST_KEY) return null;
  return { ...parseSftpUrl(config.ACH_SFTP_URL), privateKey: fs.readFileSync(config.ACH_SFTP_KEY_FILE), hostKey: config.ACH_SFTP_HOST_KEY };
}

const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;

function connectionError(error: Error & { level?: string; code?: string }, target: SftpTarget): SftpError {
  const where = `${target.username}@${target.host}:${target.port}`;
  if (error.level === 'client-authentication') {
    return new SftpError('sftp_login_refused', `the SFTP server ${where} refused the login with ACH_SFTP_KEY_FILE's key`, true);
  }
  if (/host denied|verification failed/i.test(error.message)) {
    return new SftpError(
      'sftp_host_key_mismatch',
      `the SFTP server ${where} did not present the host key pinned by ACH_SFTP_HOST_KEY; nothing was sent`,
      false,
    );
  }
  return new SftpError('sftp_unreachable', `could not talk to the SFTP server ${where}: ${error.message}`, true);
}

/** Runs `work` on one SFTP session, ending the connection however it goes; the attempt is bounded in time. */
export async function withSftp<T>(target: SftpTarget, work: (sftp: SFTPWrapper) => Promise<T>): Promise<T> {
  const pinned = parseOpenSshPublicKey(target.hostKey);
  const client = new Client();
  // A late error after the attempt has given up must not crash the worker: an 'error' without a listener throws.
  client.on('error', () => undefined);
  let timer: NodeJS.Timeout | undefined;
  try {
    const sftp = await new Promise<SFTPWrapper>((resolve, reject) => {
      client.once('error', (error) => reject(connectionError(error, target)));
      client.once('close', () => reject(new SftpError('sftp_unreachable', 'the SFTP connection closed', true)));
      client.once('ready', () => client.sftp((error, session) => (error ? reject(connectionError(error, target)) : resolve(session))));
      const config: ConnectConfig = {
        host: target.host,
        port: target.port,
        username: target.username,
        privateKey: target.privateKey,
        readyTimeout: SFTP_LIMITS.connectTimeoutMs,
        keepaliveInterval: SFTP_LIMITS.keepaliveIntervalMs,
        keepaliveCountMax: SFTP_LIMITS.keepaliveCountMax,
        // Ask for the pinned key's type, so a server with several host keys shows the one we know.
        algorithms: { serverHostKey: [pinned.type as never] },
        hostVerifier: (key: Buffer) => key.equals(pinned.blob),
      };
      client.connect(config);
    });
    const lost = new Promise<never>((_, reject) => {
      client.on('error', (error) => reject(connectionError(error, target)));
      client.on('close', () => reject(new SftpError('sftp_unreachable', 'the SFTP connection was lost midway', true)));
      timer = setTimeout(
        () => reject(new SftpError('sftp_unreachable', `the SFTP attempt took over ${SFTP_LIMITS.attemptTimeoutMs} ms`, true)),
        SFTP_LIMITS.attemptTimeoutMs,
      );
    });
    lost.catch(() => undefined);
    return await Promise.race([work(sftp), lost]);
  } finally {
    clearTimeout(timer);
    client.end();
  }
}

function statusError(error: Error & { code?: number }, action: string, path: string): SftpError {
  if (error.code === PERMISSION_DENIED) {
    return new SftpError('sftp_permission_denied', `the SFTP server refused to ${action} ${path}: permission denied`, true);
  }
  return new SftpError('sftp_failed', `could not ${action} ${path} on the SFTP server: ${error.message}`, true);
}

function call<T>(action: string, path: string, run: (done: (error: Error | null | undefined, value?: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(statusError(error, action, path)) : resolve(value as T))));
}

async function sizeOf(sftp: SFTPWrapper, path: string): Promise<number | null> {
  return new Promise((resolve, reject) =>
    sftp.stat(path, (error, stats) => {
      if (!error) return resolve(stats.size);
      if ((error as Error & { code?: number }).code === NO_SUCH_FILE) return resolve(null);
      reject(statusError(error, 'look at', path));
    }),
  );
}

/** Writes `bytes` into a fresh (truncated) file with up to writesInFlightMax requests in flight. */
async function writeWhole(sftp: SFTPWrapper, path: string, bytes: Buffer): Promise<void> {
  const handle = await call<Buffer>('write', path, (done) => sftp.open(path, 'w', done));
  try {
    let next = 0;
    // Where a crash test stops the upload (src/ach/steps.ts): every writer past half the chunks waits on it.
    const chunks = Math.ceil(bytes.length / SFTP_LIMITS.writeChunkBytes);
    const halfway = Math.floor(chunks / 2) * SFTP_LIMITS.writeChunkBytes;
    let midway: Promise<void> | undefined;
    const writer = async (): Promise<void> => {
      while (next < bytes.length) {
        if (next >= halfway) {
          midway ??= achWindowStep('upload') ?? Promise.resolve();
          await midway;
          if (next >= bytes.length) break;
        }
        const offset = next;
        const length = Math.min(SFTP_LIMITS.writeChunkBytes, bytes.length - offset);
        next += length;
        await call('write', path, (done) => sftp.write(handle, bytes, offset, length, offset, done));
      }
    };
    const writers = Math.max(1, Math.min(SFTP_LIMITS.writesInFlightMax, Math.ceil(bytes.length / SFTP_LIMITS.writeChunkBytes)));
    await Promise.all(Array.from({ length: writers }, writer));
  } finally {
    await call('close', path, (done) => sftp.close(handle, done));
  }
}

async function readWhole(sftp: SFTPWrapper, path: string): Promise<Buffer> {
  return call<Buffer>('read', path, (done) => sftp.readFile(path, done));
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export interface Delivery {
  /** `delivered`: this attempt renamed it into place; `already_delivered`: an earlier attempt had. */
  outcome: 'delivered' | 'already_delivered';
  path: string;
  bytes: number;
  sha256: string;
}

/** A NACHA file's name: what the bank sees; letters, digits, dot, dash and underscore. */
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** The temporary files of `name` in `dir` other than `keep`: `.<name>.<attempt>.part` (and `.<name>.part`, of older code). */
async function removeTemporaries(sftp: SFTPWrapper, dir: string, name: string, keep: string | null): Promise<void> {
  const entries = await call<{ filename: string }[]>('list', dir, (done) => sftp.readdir(dir, done));
  for (const { filename } of entries) {
    const path = `${dir}/${filename}`;
    if (!filename.startsWith(`.${name}.`) || !filename.endsWith('.part') || path === keep) continue;
    // Another attempt's: a dead one's leftover, or a live one's, which then fails its size check and is retried.
    await call('remove', path, (done) => sftp.unlink(path, done)).catch(() => undefined);
  }
}

/**
 * Puts `bytes` at `<dir>/outbound/<name>` so that the bank never sees half a file and never sees it under two
 * names: written whole to a temporary name of this attempt's own, `.<name>.<attempt>.part`, checked by size,
 * then renamed. Other attempts' temporary files are removed first, so none is left behind. Two attempts at
 * once (a worker presumed dead that is not) never write into one file: the rename moves whole bytes only.
 * A final name already holding the same bytes is success; holding other bytes, an error (a file is never
 * overwritten).
 */
export async function deliverFile(target: SftpTarget, name: string, bytes: Buffer): Promise<Delivery> {
  if (!FILE_NAME.test(name)) throw new Error(`a delivery file name is letters, digits, ".", "-", "_": got "${name}"`);
  const digest = sha256(bytes);
  const dir = `${target.directory}/outbound`;
  const finalPath = `${dir}/${name}`;
  const partPath = `${dir}/.${name}.${randomBytes(6).toString('hex')}.part`;
  return withSftp(target, async (sftp) => {
    if (await sameFileAt(sftp, finalPath, bytes.length, digest)) {
      await removeTemporaries(sftp, dir, name, null);
      return { outcome: 'already_delivered', path: finalPath, bytes: bytes.length, sha256: digest };
    }
    await removeTemporaries(sftp, dir, name, null);
    await writeWhole(sftp, partPath, bytes);
    const written = await sizeOf(sftp, partPath);
    if (written !== bytes.length) {
      throw new SftpError('sftp_failed', `${partPath} holds ${written ?? 'no'} bytes after the upload, not ${bytes.length}`, true);
    }
    await achWindowStep('rename');
    await call('rename', partPath, (done) => sftp.rename(partPath, finalPath, done)).catch(async (error: unknown) => {
      // Refused: the final name exists (a concurrent attempt finished first, with the same bytes or not), or
      // another attempt removed this one's temporary file.
      await call('remove', partPath, (done) => sftp.unlink(partPath, done)).catch(() => undefined);
      if (!(await sameFileAt(sftp, finalPath, bytes.length, digest))) throw error;
    });
    return { outcome: 'delivered', path: finalPath, bytes: bytes.length, sha256: digest };
  });
}

async function sameFileAt(sftp: SFTPWrapper, path: string, size: number, digest: string): Promise<boolean> {
  const existing = await sizeOf(sftp, path);
  if (existing === null) return false;
  if (existing === size && sha256(await readWhole(sftp, path)) === digest) return true;
  throw new SftpError(
    'sftp_name_taken',
    `${path} already exists with other content (${existing} bytes); a delivered file is never replaced`,
    false,
  );
}

export interface InboundFile {
  name: string;
  bytes: number;
  modifiedAt: Date;
}

/** The regular files in `<dir>/inbound/` (the bank's returns and notifications of change), oldest first. */
export async function listInbound(target: SftpTarget): Promise<InboundFile[]> {
  const path = `${target.directory}/inbound`;
  return withSftp(target, async (sftp) => {
    const entries = await call<{ filename: string; attrs: { size: number; mtime: number; isFile(): boolean } }[]>('list', path, (done) =>
      sftp.readdir(path, done),
    );
    const files = entries
      .filter((entry) => entry.attrs.isFile() && !entry.filename.startsWith('.'))
      .map((entry) => ({ name: entry.filename, bytes: entry.attrs.size, modifiedAt: new Date(entry.attrs.mtime * 1000) }))
      .sort((a, b) => a.modifiedAt.getTime() - b.modifiedAt.getTime() || a.name.localeCompare(b.name));
    if (files.length > SFTP_LIMITS.inboundFilesListedMax) {
      throw new SftpError(
        'sftp_failed',
        `${path} holds ${files.length} files, more than the ${SFTP_LIMITS.inboundFilesListedMax} read at once`,
        false,
      );
    }
    return files;
  });
}

/** The bytes of `<dir>/inbound/<name>`. */
export async function downloadInbound(target: SftpTarget, name: string): Promise<Buffer> {
  if (!FILE_NAME.test(name)) throw new Error(`an inbound file name is letters, digits, ".", "-", "_": got "${name}"`);
  const path = `${target.directory}/inbound/${name}`;
  return withSftp(target, async (sftp) => {
    const size = await sizeOf(sftp, path);
    if (size === null) throw new SftpError('sftp_failed', `${path} does not exist`, false);
    if (size > SFTP_LIMITS.inboundFileBytesMax) {
      throw new SftpError(
        'sftp_failed',
        `${path} is ${size} bytes, over the ${SFTP_LIMITS.inboundFileBytesMax} a return file may be`,
        false,
      );
    }
    return readWhole(sftp, path);
  });
}

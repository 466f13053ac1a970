import { createHash, createHmac, hkdfSync } from 'node:crypto';
import type { Config } from '../config';
import { seal, unseal } from '../sealed';

/**
 * The one place bank account numbers are sealed, opened and fingerprinted (SPEC §24, docs/ach.md). Each
 * sealed number is bound (AES-GCM additional data) to the row it rests in, so a sealed value copied into
 * another row, or another table, does not open there.
 */

/**
 * A sandbox without BANK_DATA_KEY seals with this key: published here, so it protects nothing, but the
 * sandbox stores numbers in the very form production does and no code path ever reads a number in the
 * clear. Production refuses to start without its own key (src/config.ts).
 */
const SANDBOX_BANK_DATA_KEY = createHash('sha256').update('payments-ledger sandbox BANK_DATA_KEY (public, not a secret)').digest('base64');

export type BankDataConfig = Pick<Config, 'BANK_DATA_KEY' | 'LEDGER_ENVIRONMENT'>;

function keyOf(config: BankDataConfig): string {
  if (config.BANK_DATA_KEY) return config.BANK_DATA_KEY;
  if (config.LEDGER_ENVIRONMENT === 'production') throw new Error('BANK_DATA_KEY is not configured');
  return SANDBOX_BANK_DATA_KEY;
}

/** Where a sealed number rests: its table and row. */
export type SealBinding =
  | { table: 'payment_tokens'; id: string }
  | { table: 'bank_accounts'; id: string }
  | { table: 'operator_bank_accounts'; id: string }
  | { table: 'ach_files'; id: string }
  | { table: 'ach_inbound_files'; id: string };

const aadOf = (binding: SealBinding) => `${binding.table}:${binding.id}`;

export function sealAccountNumber(config: BankDataConfig, accountNumber: string, binding: SealBinding): string {
  return seal(accountNumber, keyOf(config), aadOf(binding));
}

/** An ACH file's bytes (they hold full account numbers): sealed alike, bound to the file's row. */
export function sealFileText(config: BankDataConfig, text: string, fileId: string): string {
  return seal(text, keyOf(config), aadOf({ table: 'ach_files', id: fileId }));
}

export function openFileText(config: BankDataConfig, sealed: string, fileId: string): string {
  return unseal(sealed, keyOf(config), aadOf({ table: 'ach_files', id: fileId }));
}

export function openAccountNumber(config: BankDataConfig, sealed: string, binding: SealBinding): string {
  return unseal(sealed, keyOf(config), aadOf(binding));
}

/**
 * What tells two bank accounts apart without keeping a number: HMAC-SHA256 of routing and number under a key
 * derived from BANK_DATA_KEY (HKDF, its own label, so the sealing key is never used for two jobs). A plain
 * hash would not do: account numbers are short enough that anyone with the table could hash them all.
 */
export function accountFingerprint(config: BankDataConfig, routingNumber: string, accountNumber: string): string {
  const key = Buffer.from(hkdfSync('sha256', Buffer.from(keyOf(config), 'base64'), Buffer.alloc(0), 'bank account fingerprint v1', 32));
  return `hmac1:${createHmac('sha256', key).update(`${routingNumber}:${accountNumber}`).digest('hex')}`;
}

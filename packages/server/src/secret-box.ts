import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConflictError } from '@spool/protocol';
import type { SealedSecret } from '@spool/engine';
import type { Config } from './config.js';

const KEY_FILE = 'secrets.key';

function keyId(key: Buffer): string {
  return createHash('sha256').update('spool-secret-box-key-id\0').update(key).digest('hex').slice(0, 16);
}

/**
 * AES-256-GCM for secrets Spool must read back (webhook signing secrets: an
 * HMAC needs the secret itself, so a hash will not do). The key is never in
 * the database: SPOOL_SECRETS_KEY, or in development a key file generated
 * in the data directory. Every replica needs the same key. The associated
 * data binds a sealed value to its owner, so a row copied to another
 * organization does not open.
 */
export class SecretBox {
  readonly #configured: Buffer | null;
  readonly #keyFile: string | null;
  #fileKey: Buffer | null = null;

  constructor(config: Pick<Config, 'secretsKey' | 'environment' | 'dataDir'>) {
    this.#configured = config.secretsKey;
    // Production must not depend on a file that exists on one replica only.
    this.#keyFile = config.secretsKey === null && config.environment === 'development' ? join(config.dataDir, KEY_FILE) : null;
  }

  #key(create: boolean): Buffer | null {
    if (this.#configured) return this.#configured;
    if (!this.#keyFile) return null;
    if (this.#fileKey) return this.#fileKey;
    try {
      this.#fileKey = Buffer.from(readFileSync(this.#keyFile, 'utf8').trim(), 'base64');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !create) return null;
      mkdirSync(join(this.#keyFile, '..'), { recursive: true });
      try {
        writeFileSync(this.#keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      } catch (writeErr) {
        // Another process sharing the data directory wrote it first: use theirs.
        if ((writeErr as NodeJS.ErrnoException).code !== 'EEXIST') throw writeErr;
      }
      this.#fileKey = Buffer.from(readFileSync(this.#keyFile, 'utf8').trim(), 'base64');
    }
    if (this.#fileKey.length !== 32) throw new Error(`${this.#keyFile} does not hold a 32-byte base64 key; delete it (secrets sealed with it are lost) or set SPOOL_SECRETS_KEY`);
    return this.#fileKey;
  }

  /** Seals `plaintext` for `owner`; 409 when this server has no key to seal with. */
  seal(plaintext: string, owner: string): SealedSecret {
    const key = this.#key(true);
    if (!key) {
      throw new ConflictError('This server cannot store secrets: its operator must set SPOOL_SECRETS_KEY (32 bytes, base64 or hex, the same on every replica) and restart', { setting: 'SPOOL_SECRETS_KEY' });
    }
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { ciphertext, iv, authTag: cipher.getAuthTag(), keyId: keyId(key) };
  }

  /**
   * The plaintext, or a reason it cannot be read: no key on this server, a
   * different key than the one that sealed it, or a tampered row.
   */
  open(sealed: SealedSecret, owner: string): { ok: true; value: string } | { ok: false; reason: string } {
    const key = this.#key(false);
    if (!key) return { ok: false, reason: 'no secrets key is configured (SPOOL_SECRETS_KEY)' };
    if (sealed.keyId !== keyId(key)) return { ok: false, reason: 'sealed with a different key than this server\'s SPOOL_SECRETS_KEY' };
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
      decipher.setAAD(Buffer.from(owner, 'utf8'));
      decipher.setAuthTag(sealed.authTag);
      return { ok: true, value: Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8') };
    } catch {
      return { ok: false, reason: 'the stored secret does not authenticate (altered, or moved from another organization)' };
    }
  }
}

/** The associated data of an organization's webhook signing secret. */
export function webhookSecretOwner(organizationId: string, provider: string): string {
  return `webhook-secret:${organizationId}:${provider}`;
}

const boxes = new WeakMap<object, SecretBox>();

/** The server's one SecretBox (it caches the development key file once read). */
export function secretBoxOf(config: Config): SecretBox {
  let box = boxes.get(config);
  if (!box) boxes.set(config, (box = new SecretBox(config)));
  return box;
}

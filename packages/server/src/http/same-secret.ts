import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * The one comparison for secrets a client presents (admin key, webhook
 * token, provider signatures, metrics token): SHA-256 both sides, then
 * timingSafeEqual, so neither the content nor the length of the expected
 * value leaks through response timing. API keys are never compared: they
 * are looked up by their SHA-256 in an index. JWT signatures are checked by
 * jose with WebCrypto's HMAC verify, which is constant-time too.
 */
export function sameSecret(presented: string, expected: string): boolean {
  return timingSafeEqual(createHash('sha256').update(presented, 'utf8').digest(), createHash('sha256').update(expected, 'utf8').digest());
}

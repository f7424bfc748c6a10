import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ValidationError } from '@spool/protocol';

/**
 * Where outgoing webhooks may not go outside development (SSRF): private,
 * loopback, link-local, shared, multicast and reserved ranges, over IPv4 and
 * IPv6 (including IPv4-mapped IPv6 addresses).
 */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['64:ff9b::', 96], ['100::', 64],
] as const) FORBIDDEN.addSubnet(net, prefix, 'ipv6');

/** True for an address a webhook must not reach outside development. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return FORBIDDEN.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return FORBIDDEN.check(mapped[1]!, 'ipv4');
    return FORBIDDEN.check(address, 'ipv6');
  }
  return true;
}

export type Environment = 'development' | 'production';

/** Parses and checks a webhook URL's shape: http(s), at most 2048 characters. */
export function parseWebhookUrl(raw: string, field = 'url'): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(`Invalid webhook URL: ${field} is not an absolute URL`, { field });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError(`Invalid webhook URL: ${field} must use http or https`, { field });
  if (raw.length > 2048) throw new ValidationError(`Invalid webhook URL: ${field} is longer than 2048 characters`, { field });
  if (url.username || url.password) throw new ValidationError(`Invalid webhook URL: ${field} must not contain credentials`, { field });
  return url;
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}

/**
 * Refuses (400, "Invalid webhook URL …") a URL whose host resolves to a
 * forbidden address, outside development. Checked when a webhook is saved
 * and again, on the actual connection, at delivery (see safeLookup).
 */
export async function assertWebhookTarget(raw: string, environment: Environment, field = 'url'): Promise<URL> {
  const url = parseWebhookUrl(raw, field);
  if (environment !== 'production') return url;
  const host = hostOf(url);
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await resolveAll(host);
  } catch {
    throw new ValidationError(`Invalid webhook URL: ${field} host ${host} does not resolve`, { field });
  }
  if (addresses.length === 0 || addresses.some(isForbiddenAddress)) {
    throw new ValidationError(`Invalid webhook URL: ${field} host ${host} resolves to a private, loopback or link-local address`, { field });
  }
  return url;
}

/**
 * A DNS lookup for outgoing connections that fails on forbidden addresses,
 * so the address checked is the address connected to (no DNS rebinding
 * between check and use).
 */
export const safeLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 4);
    const list = addresses as unknown as { address: string; family: number }[];
    const bad = list.find((a) => isForbiddenAddress(a.address));
    if (bad || list.length === 0) {
      return callback(Object.assign(new Error(`Invalid webhook URL: ${hostname} resolves to a forbidden address`), { code: 'ESSRF' }), '', 4);
    }
    if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: typeof list) => void)(null, list);
    return callback(null, list[0]!.address, list[0]!.family);
  });
};

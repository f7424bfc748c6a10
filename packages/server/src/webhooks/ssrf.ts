import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { ValidationError } from '@spool/protocol';

/**
 * Where outgoing requests (webhooks, completion webhooks, test deliveries)
 * may go, so that the server never becomes a proxy into the network it runs
 * in. One decision, `targetRefusal`, is made on a URL and the addresses its
 * host resolves to: when a URL is saved and again on the very addresses a
 * delivery connects to (`guardedLookup`). docs/security.md, "Outgoing
 * requests (SSRF)", is the user-facing description.
 */

export type Environment = 'development' | 'production';

export type AddressClass =
  | 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'broadcast' | 'reserved';

/** An allowed network: the address bytes (4 or 16) and the prefix length. */
export interface Network {
  bytes: Uint8Array;
  prefix: number;
  text: string;
}

export interface WebhookPolicy {
  production: boolean;
  /** Development with the server bound to loopback: only then can nobody else use a loopback target. */
  allowLoopback: boolean;
  /** Plain http:// targets: always in development, in production only with WEBHOOK_ALLOW_HTTP=true. */
  allowHttp: boolean;
  /** WEBHOOK_ALLOWED_NETWORKS: targets the operator allows although they are not public. */
  allowedNetworks: readonly Network[];
}

function ipv4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split('.').map(Number));
}

/** 16 bytes of a valid IPv6 address (as isIP accepts it; a zone id is dropped). */
function ipv6Bytes(text: string): Uint8Array {
  const address = text.replace(/%.*$/, '');
  const words = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((group) => {
      if (!group.includes('.')) return [parseInt(group, 16)];
      const [a, b, c, d] = ipv4Bytes(group);
      return [(a! << 8) | b!, (c! << 8) | d!];
    });
  };
  const gap = address.indexOf('::');
  const all = gap === -1
    ? words(address)
    : (() => {
      const head = words(address.slice(0, gap));
      const tail = words(address.slice(gap + 2));
      return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
    })();
  const bytes = new Uint8Array(16);
  all.forEach((word, i) => { bytes[2 * i] = word >> 8; bytes[2 * i + 1] = word & 0xff; });
  return bytes;
}

/** The address's bytes (4 for IPv4, 16 for IPv6), or null when it is not an IP address. */
export function addressBytes(address: string): Uint8Array | null {
  const family = isIP(address);
  if (family === 4) return ipv4Bytes(address);
  if (family === 6) return ipv6Bytes(address);
  return null;
}

function inNetwork(bytes: Uint8Array, net: Uint8Array, prefix: number): boolean {
  if (bytes.length !== net.length) return false;
  const whole = prefix >> 3;
  for (let i = 0; i < whole; i++) if (bytes[i] !== net[i]) return false;
  const rest = prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (bytes[whole]! & mask) === (net[whole]! & mask);
}

type Range = readonly [net: string, prefix: number, kind: AddressClass];

// First match wins: the metadata hosts come before the ranges that contain them.
const IPV4_RANGES: readonly Range[] = [
  ['169.254.169.254', 32, 'metadata'], // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
  ['169.254.170.2', 32, 'metadata'], // AWS ECS task credentials
  ['100.100.100.200', 32, 'metadata'], // Alibaba Cloud
  ['0.0.0.0', 8, 'unspecified'],
  ['127.0.0.0', 8, 'loopback'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'], // CGNAT shared space
  ['172.16.0.0', 12, 'private'],
  ['192.168.0.0', 16, 'private'],
  ['192.0.0.0', 24, 'private'], // IETF protocol assignments
  ['198.18.0.0', 15, 'private'], // benchmarking
  ['169.254.0.0', 16, 'link-local'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
  ['192.0.2.0', 24, 'reserved'],
  ['198.51.100.0', 24, 'reserved'],
  ['203.0.113.0', 24, 'reserved'],
];
const IPV6_RANGES: readonly Range[] = [
  ['fd00:ec2::254', 128, 'metadata'], // AWS over IPv6
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['64:ff9b:1::', 48, 'private'], // local-use NAT64
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'private'], // deprecated site-local
  ['fc00::', 7, 'private'], // unique local
  ['ff00::', 8, 'multicast'],
  ['2001:db8::', 32, 'reserved'],
  ['100::', 64, 'reserved'], // discard-only
];
const compile = (ranges: readonly Range[]) => ranges.map(([net, prefix, kind]) => ({ bytes: addressBytes(net)!, prefix, kind }));
const V4 = compile(IPV4_RANGES);
const V6 = compile(IPV6_RANGES);

function rangeClass(bytes: Uint8Array): AddressClass {
  for (const range of bytes.length === 4 ? V4 : V6) if (inNetwork(bytes, range.bytes, range.prefix)) return range.kind;
  return 'public';
}

const SEVERITY: readonly AddressClass[] = ['public', 'reserved', 'broadcast', 'multicast', 'unspecified', 'private', 'loopback', 'link-local', 'metadata'];

/**
 * The IPv4 addresses an IPv6 address stands for: IPv4-mapped (::ffff:a.b.c.d),
 * IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64
 * (64:ff9b::/96), 6to4 (2002:aabb:ccdd::/48) and Teredo (2001::/32: server,
 * and client stored inverted). Such an address can reach the IPv4 host, so it
 * is judged as that host.
 */
function embeddedIpv4(b: Uint8Array): { form: string; addresses: Uint8Array[] } | null {
  const zero = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const last = b.slice(12, 16);
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return { form: 'IPv4-mapped', addresses: [last] };
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return { form: 'IPv4-translated', addresses: [last] };
  // :: and ::1 are IPv6's own unspecified and loopback addresses.
  if (zero(0, 12) && !(zero(12, 15) && (b[15] === 0 || b[15] === 1))) return { form: 'IPv4-compatible', addresses: [last] };
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return { form: 'NAT64', addresses: [last] };
  if (b[0] === 0x20 && b[1] === 0x02) return { form: '6to4', addresses: [b.slice(2, 6)] };
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0 && b[3] === 0) return { form: 'Teredo', addresses: [b.slice(4, 8), last.map((x) => x ^ 0xff)] };
  return null;
}

export interface AddressInfo {
  kind: AddressClass;
  /** Set for IPv6 forms that embed an IPv4 address (see embeddedIpv4). */
  embedded: { form: string; ipv4: string[] } | null;
}

/** What an IP address is, judged by the IPv4 address it embeds where it embeds one; null when not an IP address. */
export function classifyAddress(address: string): AddressInfo | null {
  const bytes = addressBytes(address);
  if (!bytes) return null;
  const own = rangeClass(bytes);
  const embedded = bytes.length === 16 && own === 'public' ? embeddedIpv4(bytes) : null;
  if (!embedded) return { kind: own, embedded: null };
  const kinds = embedded.addresses.map(rangeClass);
  const kind = kinds.reduce((worst, k) => (SEVERITY.indexOf(k) > SEVERITY.indexOf(worst) ? k : worst), 'public' as AddressClass);
  return { kind, embedded: { form: embedded.form, ipv4: embedded.addresses.map((a) => a.join('.')) } };
}

/** True for an address that is not public (kept for the policy's unit tests). */
export function isForbiddenAddress(address: string): boolean {
  return classifyAddress(address)?.kind !== 'public';
}

/** Parses one WEBHOOK_ALLOWED_NETWORKS entry: a CIDR (10.0.0.0/8, fd00::/8) or a single address. */
export function parseNetwork(text: string): Network {
  const slash = text.lastIndexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const bytes = addressBytes(address);
  if (!bytes || address.includes('%')) throw new Error(`"${text}" is not an IP network (write e.g. 10.0.0.0/8 or fd00::/8)`);
  const max = bytes.length * 8;
  const prefixText = slash === -1 ? String(max) : text.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > max) throw new Error(`"${text}" has an invalid prefix length (0 to ${max})`);
  return { bytes, prefix, text };
}

function allowedByOperator(address: string, info: AddressInfo, policy: WebhookPolicy): boolean {
  const candidates = [addressBytes(address)!, ...(info.embedded?.ipv4.map(ipv4Bytes) ?? [])];
  // A metadata service hands out cloud credentials: a broad network such as
  // 169.254.0.0/16 does not open it, only the address itself listed alone.
  const networks = info.kind === 'metadata' ? policy.allowedNetworks.filter((n) => n.prefix === n.bytes.length * 8) : policy.allowedNetworks;
  return networks.some((n) => candidates.some((bytes) => inNetwork(bytes, n.bytes, n.prefix)));
}

const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** Why one resolved address may not be reached, or null when it may. */
function addressRefusal(address: string, policy: WebhookPolicy): string | null {
  const info = classifyAddress(address);
  if (!info) return `${address} is not an IP address`;
  if (allowedByOperator(address, info, policy)) return null;
  if (info.embedded && policy.production) return `${address} is an IPv6 address embedding IPv4 ${info.embedded.ipv4.join(', ')} (${info.embedded.form}), refused in production`;
  if (info.kind === 'public') return null;
  if (info.kind === 'loopback') {
    if (policy.allowLoopback) return null;
    return `${address} is a loopback address (allowed only in development with the server bound to loopback, HOST=127.0.0.1)`;
  }
  return `${address} is a ${info.kind} address`;
}

const ALLOW_HINT = 'an operator can allow a network explicitly with WEBHOOK_ALLOWED_NETWORKS';

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

/**
 * THE policy: why `url` may not be requested when its host resolves to
 * `addresses` (null: not resolved yet; the addresses are judged when
 * connecting), or null when it may. Messages start with "Invalid webhook
 * URL" or "HTTP not allowed" (what Spooled clients look for) and say what to do.
 */
export function targetRefusal(url: URL, addresses: readonly string[] | null, policy: WebhookPolicy, field = 'url'): string | null {
  const host = hostOf(url);
  const hostAddresses = isIP(host) ? [host] : addresses;
  const named = (why: string) => `Invalid webhook URL: ${field} host ${host} ${why}; use a public address (${ALLOW_HINT})`;
  // By name always: such a name may resolve to anything, and an operator who
  // means to reach a metadata service can list its address alone.
  if (METADATA_NAMES.has(host)) return named('is a cloud metadata service');
  if ((host === 'localhost' || host.endsWith('.localhost')) && !policy.allowLoopback && hostAddresses === null) {
    return named('is a loopback name (allowed only in development with the server bound to loopback, HOST=127.0.0.1)');
  }
  if (hostAddresses !== null) {
    if (hostAddresses.length === 0) return named('does not resolve');
    for (const address of hostAddresses) {
      const why = addressRefusal(address, policy);
      if (why) return named(address === host ? `is not allowed: ${why}` : `resolves to a refused address: ${why}`);
    }
  }
  if (url.protocol === 'http:' && !policy.allowHttp) {
    return `HTTP not allowed: ${field} must use https in production (an operator can allow plain http with WEBHOOK_ALLOW_HTTP=true)`;
  }
  return null;
}

/** Whether HOST is a loopback address, so that nothing but this machine can call the server. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost') return true;
  const info = classifyAddress(bare);
  return info !== null && info.embedded === null && info.kind === 'loopback';
}

/** The policy of a configuration (config.ts). */
export function webhookPolicy(config: { environment: Environment; host: string; webhookAllowedNetworks: readonly Network[]; webhookAllowHttp: boolean }): WebhookPolicy {
  const production = config.environment === 'production';
  return {
    production,
    allowLoopback: !production && isLoopbackHost(config.host),
    allowHttp: !production || config.webhookAllowHttp,
    allowedNetworks: config.webhookAllowedNetworks,
  };
}

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

function resolveAll(host: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses.map((a) => a.address))));
  });
}

/**
 * Refuses (400) a URL the policy refuses, when a webhook or a job's
 * completion_webhook is saved. A name that does not resolve is refused in
 * production; in development it is accepted and judged when delivering
 * (the address is checked on the connection anyway).
 */
export async function assertWebhookTarget(raw: string, policy: WebhookPolicy, field = 'url'): Promise<URL> {
  const url = parseWebhookUrl(raw, field);
  const host = hostOf(url);
  let addresses: string[] | null = null;
  if (!isIP(host)) {
    try {
      addresses = await resolveAll(host);
    } catch {
      // What the name and scheme alone refuse says more than "does not resolve".
      const refusal = targetRefusal(url, null, policy, field);
      if (refusal) throw new ValidationError(refusal, { field });
      if (policy.production) throw new ValidationError(`Invalid webhook URL: ${field} host ${host} does not resolve; check the name`, { field });
    }
  }
  const refusal = targetRefusal(url, addresses, policy, field);
  if (refusal) throw new ValidationError(refusal, { field });
  return url;
}

/**
 * A DNS lookup for one outgoing request that refuses when any resolved
 * address is refused, and hands the connection exactly the addresses it
 * checked, so DNS rebinding between the check and the connection cannot
 * slip through. (Node does not call `lookup` for IP literals: sendWebhook
 * checks those itself.)
 */
export function guardedLookup(url: URL, policy: WebhookPolicy): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 4);
      const refusal = targetRefusal(url, addresses.map((a) => a.address), policy);
      if (refusal) return callback(Object.assign(new Error(refusal), { code: 'ESSRF' }), '', 4);
      if ((options as { all?: boolean }).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

// Where webhooks may go (contract §10). In production an endpoint must be https and must not reach a
// loopback, private, link-local or otherwise internal address: checked when the URL is registered and
// again at every delivery, on the addresses the connection actually uses (a name may resolve elsewhere later).
// The sandbox allows both, so an integrator can point it at a local receiver.
import dns from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { PaymentsEnv } from '../../config.js';
import { parseHttpUrl } from '../../platform/http-url.js';

export const MAX_URL_LENGTH = 2048;

const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['::ffff:0:0:0', 96], // IPv4-translated
  ['64:ff9b:1::', 48], // local-use NAT64
  ['2001::', 32], // Teredo (the IPv4 inside is obscured)
  ['2002::', 16], // 6to4 (deprecated; may wrap any IPv4 address)
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  INTERNAL.addSubnet(network, prefix, 'ipv6');
}

/**
 * The IPv4 address an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) address stands for, if it is
 * one. Checked explicitly rather than by an IPv6 rule: BlockList matches plain IPv4 addresses against
 * IPv6 rules as if mapped, so a ::ffff:0:0/96 rule would refuse every IPv4 address.
 */
function embeddedIpv4(address: string): string | undefined {
  const m = /^(?:::ffff|64:ff9b:):([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address) ?? /^(?:::ffff|64:ff9b:):(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (!m) return undefined;
  if (m[2] === undefined) return m[1];
  const hi = parseInt(m[1] as string, 16);
  const lo = parseInt(m[2], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** True for an address no production webhook may reach. */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family === 6) {
    const embedded = embeddedIpv4(address);
    if (embedded !== undefined) return isInternalAddress(embedded);
    return INTERNAL.check(address, 'ipv6');
  }
  return true; // not an address at all: refuse
}

/** The host part of a URL as a resolver or isIP understands it ([::1] → ::1). */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** What is wrong with a URL as an endpoint, judged without the network; undefined when nothing is. */
export function urlProblem(raw: string, env: PaymentsEnv): string | undefined {
  if (raw.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  const url = parseHttpUrl(raw, env, 'https://example.com/webhooks');
  if (typeof url === 'string') return url;
  if (url.hash !== '') return 'must not have a #fragment';
  if (env === 'production' && isIP(hostOf(url)) !== 0 && isInternalAddress(hostOf(url))) {
    return `must not point at a loopback, private or link-local address (${hostOf(url)})`;
  }
  return undefined;
}

export type Resolve = (host: string) => Promise<string[]>;

// c-ares with a time limit rather than getaddrinfo: getaddrinfo runs on libuv's four pool threads with no
// time limit, so one tenant's unanswering DNS server could stall every other tenant's deliveries.
const resolver = new dns.promises.Resolver({ timeout: 2500, tries: 2 });

/** A host's IPv4 and IPv6 addresses from DNS; `localhost` names are loopback (RFC 6761) without asking. */
export const systemResolve: Resolve = async (host) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  if (addresses.length === 0) throw v4.status === 'rejected' ? (v4.reason as Error) : new Error(`${host} has no address`);
  return addresses;
};

/**
 * Resolves the URL's host and refuses it in production when any of its addresses is internal.
 * Returns the problem, or undefined when the URL may be called.
 */
export async function destinationProblem(raw: string, env: PaymentsEnv, resolve: Resolve = systemResolve): Promise<string | undefined> {
  const shape = urlProblem(raw, env);
  if (shape || env !== 'production') return shape;
  const host = hostOf(new URL(raw));
  if (isIP(host) !== 0) return undefined; // checked by urlProblem
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return `host '${host}' does not resolve`;
  }
  return addressesProblem(host, addresses);
}

/** What is wrong with the addresses a host resolved to: none at all, or any internal one. */
function addressesProblem(host: string, addresses: readonly string[]): string | undefined {
  const internal = addresses.find(isInternalAddress);
  if (internal !== undefined) return `host '${host}' resolves to ${internal}, a loopback, private or link-local address`;
  if (addresses.length === 0) return `host '${host}' does not resolve`;
  return undefined;
}

export class DestinationRefused extends Error {
  readonly code = 'EDESTINATIONREFUSED';
}

/**
 * A `lookup` for http.request that refuses internal addresses, so the check applies to the very address
 * the socket connects to (no gap between checking a name and connecting to it).
 */
export function guardedLookup(resolve: Resolve = systemResolve): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const reason = addressesProblem(hostname, addresses);
        if (reason !== undefined) {
          callback(new DestinationRefused(reason), '', 0);
          return;
        }
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const all = addresses.map((address) => ({ address, family: isIP(address) })).filter((a) => family === undefined || a.family === family);
        if (all.length === 0) {
          callback(Object.assign(new Error(`host '${hostname}' has no IPv${family} address`), { code: 'ENOTFOUND' }), '', 0);
          return;
        }
        if (options.all) (callback as unknown as (err: null, list: typeof all) => void)(null, all);
        else callback(null, all[0]?.address ?? '', all[0]?.family ?? 4);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

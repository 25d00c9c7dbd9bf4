// Where webhooks may go. In production an endpoint must be https and must not reach a
// loopback, private, link-local or otherwise internal address: checked when the URL is registered and
// again at every delivery, on the addresses the connection actually uses (a name may resolve elsewhere later).
// The sandbox allows both, so an integrator can point it at a local receiver.
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { PaymentsEnv } from '../../config.js';
import { parseHttpUrl } from '../../platform/http-url.js';

export const MAX_URL_LENGTH = 2048;

/**
 * True for an address no production webhook may reach: anything ipaddr.js does not class as global unicast
 * (loopback, private, link-local and cloud metadata, carrier-grade NAT, documentation, benchmarking, multicast,
 * reserved, unique local, 6to4, Teredo, NAT64…), judged on the IPv4 address an IPv4-mapped one stands for. The
 * deprecated IPv4-compatible form (::a.b.c.d), which ipaddr.js calls unicast, is refused too. Not an address: refused.
 */
export function isInternalAddress(address: string): boolean {
  if (!ipaddr.isValid(address) || isIP(address) === 0) return true;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).match(IPV4_COMPATIBLE)) return true;
  return parsed.range() !== 'unicast';
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number];

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

/** A host name's addresses (IPv4 and IPv6): DNS, or a test's table. */
export type LookUpAddresses = (host: string) => Promise<string[]>;

// c-ares with a time limit rather than getaddrinfo: getaddrinfo runs on libuv's four pool threads with no
// time limit, so one tenant's unanswering DNS server could stall every other tenant's deliveries.
const resolver = new dns.promises.Resolver({ timeout: 2500, tries: 2 });

/** A host's IPv4 and IPv6 addresses from DNS; `localhost` names are loopback (RFC 6761) without asking. */
export const lookUpAddressesInDns: LookUpAddresses = async (host) => {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return ['127.0.0.1', '::1'];
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
  if (addresses.length === 0)
    throw v4.status === 'rejected' ? (v4.reason as Error) : new Error(`${host} has no address`);
  return addresses;
};

/**
 * Looks up the URL's host and refuses it in production when any of its addresses is internal.
 * Returns the problem, or undefined when the URL may be called.
 */
export async function destinationProblem(
  raw: string,
  env: PaymentsEnv,
  lookUpAddresses: LookUpAddresses = lookUpAddressesInDns,
): Promise<string | undefined> {
  const shape = urlProblem(raw, env);
  if (shape || env !== 'production') return shape;
  const host = hostOf(new URL(raw));
  if (isIP(host) !== 0) return undefined; // checked by urlProblem
  let addresses: string[];
  try {
    addresses = await lookUpAddresses(host);
  } catch {
    return `host '${host}' does not resolve`;
  }
  return addressesProblem(host, addresses);
}

/** What is wrong with the addresses a host resolved to: none at all, or any internal one. */
function addressesProblem(host: string, addresses: readonly string[]): string | undefined {
  const internal = addresses.find(isInternalAddress);
  if (internal !== undefined)
    return `host '${host}' resolves to ${internal}, a loopback, private or link-local address`;
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
export function guardedLookup(lookUpAddresses: LookUpAddresses = lookUpAddressesInDns): LookupFunction {
  return (hostname, options, callback) => {
    lookUpAddresses(hostname).then(
      (addresses) => {
        const reason = addressesProblem(hostname, addresses);
        if (reason !== undefined) {
          callback(new DestinationRefused(reason), '', 0);
          return;
        }
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const all = addresses
          .map((address) => ({ address, family: isIP(address) }))
          .filter((a) => family === undefined || a.family === family);
        if (all.length === 0) {
          callback(
            Object.assign(new Error(`host '${hostname}' has no IPv${family} address`), { code: 'ENOTFOUND' }),
            '',
            0,
          );
          return;
        }
        if (options.all) (callback as unknown as (err: null, list: typeof all) => void)(null, all);
        else callback(null, all[0]?.address ?? '', all[0]?.family ?? 4);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

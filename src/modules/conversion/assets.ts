// The crypto assets the service takes (deposits in, payouts from an asset balance), on which networks, and what
// an address looks like on each. Amounts of an asset are integers in its minor unit: 10^-6 of a USDT or a USDC
// (whatever the token's decimals on the chain; the reporter of a deposit converts).
import { randomBytes } from 'node:crypto';

export const NETWORKS = ['tron', 'ethereum', 'polygon', 'base', 'solana'] as const;
export type Network = (typeof NETWORKS)[number];

export const ASSETS = {
  USDT: { name: 'Tether USD', exponent: 6, networks: ['tron', 'ethereum', 'polygon'] as readonly Network[] },
  USDC: { name: 'USD Coin', exponent: 6, networks: ['ethereum', 'polygon', 'base', 'solana'] as readonly Network[] },
} as const;
export type Asset = keyof typeof ASSETS;
export const ASSET_CODES = Object.keys(ASSETS) as Asset[];

export function isAsset(code: string): code is Asset {
  return Object.hasOwn(ASSETS, code);
}

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const EVM = /^0x[0-9a-fA-F]{40}$/;
const ADDRESS_FORMAT: Readonly<Record<Network, { pattern: RegExp; example: string }>> = {
  tron: { pattern: /^T[1-9A-HJ-NP-Za-km-z]{33}$/, example: 'T followed by 33 base58 characters' },
  ethereum: { pattern: EVM, example: '0x followed by 40 hex digits' },
  polygon: { pattern: EVM, example: '0x followed by 40 hex digits' },
  base: { pattern: EVM, example: '0x followed by 40 hex digits' },
  solana: { pattern: /^[1-9A-HJ-NP-Za-km-z]{32,44}$/, example: '32 to 44 base58 characters' },
};

/** Why `address` cannot be an address on `network`, or undefined when it can. */
export function addressProblem(network: Network, address: string): string | undefined {
  const format = ADDRESS_FORMAT[network];
  return format.pattern.test(address) ? undefined : `is not a ${network} address (${format.example})`;
}

const EVM_NETWORKS: readonly Network[] = ['ethereum', 'polygon', 'base'];

/** One spelling per account: EVM addresses are case-insensitive (the case is only a checksum), so lowercase. */
export function normaliseAddress(network: Network, address: string): string {
  return EVM_NETWORKS.includes(network) ? address.toLowerCase() : address;
}

/**
 * One spelling per transaction: EVM and TRON hashes are hex (lowercase, without 0x); a Solana signature is
 * base58 and case-sensitive. Undefined when the hash cannot be one of the network's.
 */
export function normaliseTxHash(network: Network, hash: string): string | undefined {
  if (network === 'solana') return /^[1-9A-HJ-NP-Za-km-z]{64,90}$/.test(hash) ? hash : undefined;
  const hex = hash.replace(/^0x/i, '').toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? hex : undefined;
}

/** Why `asset` on `network` is not taken, or undefined when it is. */
export function assetNetworkProblem(
  asset: string,
  network: string,
): { field: 'asset' | 'network'; message: string } | undefined {
  if (!isAsset(asset)) return { field: 'asset', message: `must be one of ${ASSET_CODES.join(', ')}` };
  if (!(ASSETS[asset].networks as readonly string[]).includes(network)) {
    return { field: 'network', message: `${asset} is taken on ${ASSETS[asset].networks.join(', ')}` };
  }
  return undefined;
}

function base58(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += BASE58[b % 58];
  return out;
}

/** A sandbox address in the network's format, from random bytes: nothing on any chain controls it. */
export function sandboxAddress(network: Network): string {
  switch (network) {
    case 'tron':
      return `T${base58(33)}`;
    case 'solana':
      return base58(44);
    case 'ethereum':
    case 'polygon':
    case 'base':
      return `0x${randomBytes(20).toString('hex')}`;
  }
}

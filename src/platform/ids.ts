// Identifiers: time-ordered UUID v7 (RFC 9562), so ids sort by creation and index well.
import { randomBytes } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

/** A UUID v7 for the given time; ids made in the same millisecond by this process still increase. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  if (now <= lastMs) {
    now = lastMs;
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) now = ++lastMs;
  } else {
    lastMs = now;
    sequence = bytes.readUInt16BE(6) & 0x7ff; // start low so many ids fit in one millisecond
  }
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const UUID_RE = new RegExp(UUID_PATTERN);

export function isUuid(value: string): boolean {
  return UUID_RE.test(value);
}

/** The millisecond timestamp carried by a v7 id (used so created_at and the id agree). */
export function uuidv7Time(id: string): Date {
  return new Date(parseInt(id.replace(/-/g, '').slice(0, 12), 16));
}

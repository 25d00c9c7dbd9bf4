// What the payer must do, by the rail's instruction type in the catalogue; null for asynchronous rails. A redirect
// rail's instruction is stored at create without its address, which the operator gives in answer to the initiation
// (recordRedirectUrl); until then the API shows null.
import { createHash } from 'node:crypto';
import { maskPhone } from '../../platform/logging.js';
import type { Market, Rail } from '../catalogue/catalogue.schema.js';

export type PaymentInstruction = Record<string, string> | null;

/** One formatter per language and exponent: building an Intl.NumberFormat costs far more than using one. */
const formatters = new Map<string, Intl.NumberFormat>();

export function formatAmount(amount: number, currency: string, exponent: number, language: 'en' | 'fr'): string {
  const major = amount / 10 ** exponent;
  const key = `${language}:${exponent}`;
  let formatter = formatters.get(key);
  if (!formatter) {
    formatter = new Intl.NumberFormat(language === 'fr' ? 'fr-FR' : 'en-GB', {
      minimumFractionDigits: exponent,
      maximumFractionDigits: exponent,
    });
    formatters.set(key, formatter);
  }
  return `${currency} ${formatter.format(major)}`;
}

/** A dedicated receiving account number for one collection: stable for that collection, 10 digits. */
export function virtualAccountNumber(collectionId: string): string {
  const digest = createHash('sha256').update(collectionId).digest();
  return String(digest.readBigUInt64BE(0) % 10_000_000_000n).padStart(10, '0');
}

export function paymentInstruction(
  market: Market,
  rail: Rail,
  c: {
    id: string;
    amount: number;
    currency: string;
    exponent: number;
    phone: string | undefined;
    reference: string;
    /** Name on the receiving account; default `Collection <reference>`. */
    accountName?: string | undefined;
  },
): PaymentInstruction {
  const instruction = rail.instruction;
  if (instruction === null) return null;
  const amount = formatAmount(c.amount, c.currency, c.exponent, market.language);
  const phone = c.phone === undefined ? '' : maskPhone(c.phone);
  const fr = market.language === 'fr';
  switch (instruction.type) {
    case 'push_prompt':
      return {
        type: 'push_prompt',
        message: fr
          ? `Validez la demande ${rail.name} de ${amount} envoyée au ${phone} avec votre code secret.`
          : `Approve the ${rail.name} prompt for ${amount} sent to ${phone} with your PIN.`,
      };
    case 'ussd_code':
      return {
        type: 'ussd_code',
        ussd_code: instruction.ussd_code,
        message: fr
          ? `Composez ${instruction.ussd_code} depuis le ${phone} et suivez les instructions pour payer ${amount}.`
          : `Dial ${instruction.ussd_code} from ${phone} and follow the prompts to pay ${amount}.`,
      };
    case 'redirect':
      return {
        type: 'redirect',
        message: fr
          ? `Ouvrez la page ${rail.name} pour payer ${amount}. Sur un téléphone, elle s'ouvre dans l'application ${rail.name}.`
          : `Open the ${rail.name} page to pay ${amount}. On a phone it opens in the ${rail.name} app.`,
      };
    case 'bank_transfer': {
      const account = virtualAccountNumber(c.id);
      return {
        type: 'bank_transfer',
        bank_name: instruction.bank_name,
        account_number: account,
        account_name: (c.accountName ?? `Collection ${c.reference}`).slice(0, 64),
        message: fr
          ? `Virez exactement ${amount} au compte ${account} (${instruction.bank_name}).`
          : `Transfer exactly ${amount} to account ${account} at ${instruction.bank_name}.`,
      };
    }
  }
}

/**
 * The stored instruction with the address the operator gave for the payer to open, when it is a redirect that has
 * none yet; otherwise the same object (the first address given stays).
 */
export function recordRedirectUrl(instruction: PaymentInstruction, url: string | undefined): PaymentInstruction {
  if (url === undefined || instruction?.type !== 'redirect' || instruction.url !== undefined) return instruction;
  return { ...instruction, url };
}

/** The instruction as the API shows it: a redirect whose address the operator has not given yet is null. */
export function apiInstruction(instruction: PaymentInstruction): PaymentInstruction {
  if (instruction?.type === 'redirect' && instruction.url === undefined) return null;
  return instruction;
}

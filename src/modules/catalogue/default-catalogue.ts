// The built-in market and rail catalogue. Data only: an operator replaces it with CATALOGUE_FILE.
import type { Catalogue, Rail } from './catalogue.schema.js';

/**
 * A rail whose operator gives the payer a page to open (Wave's launch URL, which opens the Wave app on a phone; Orange
 * Money's Web Payment page): the address comes with the operator's answer to the initiation.
 */
function redirectRail(name: string, expirySeconds: number): Rail {
  return {
    name,
    type: 'mobile_money',
    customer_fields: ['phone_number'],
    expiry_seconds: expirySeconds,
    instruction: { type: 'redirect' },
  };
}

/** Orange Money Web Payment: a payment page, and no refund or payout call in Orange's API. */
function orangeMoneyRail(): Rail {
  return { ...redirectRail('Orange Money', 1800), refunds: false, payouts: false };
}

/** The common mobile-money rail: the payer approves a prompt on the phone within ten minutes. A fresh object each
 * time, so a copy of the catalogue can change one market's rail without touching another's. */
function pushPromptRail(name: string): Rail {
  return {
    name,
    type: 'mobile_money',
    customer_fields: ['phone_number'],
    expiry_seconds: 600,
    instruction: { type: 'push_prompt' },
  };
}

export const DEFAULT_CATALOGUE: Catalogue = {
  currencies: {
    KES: { exponent: 2, min_amount: 100, max_amount: 25_000_000 },
    GHS: { exponent: 2, min_amount: 100, max_amount: 5_000_000 },
    UGX: { exponent: 0, min_amount: 500, max_amount: 5_000_000 },
    TZS: { exponent: 2, min_amount: 10_000, max_amount: 500_000_000 },
    RWF: { exponent: 0, min_amount: 100, max_amount: 5_000_000 },
    ZMW: { exponent: 2, min_amount: 100, max_amount: 10_000_000 },
    NGN: { exponent: 2, min_amount: 10_000, max_amount: 1_000_000_000 },
    // The CFA francs have no minor unit: amounts are whole francs.
    XOF: { exponent: 0, min_amount: 100, max_amount: 2_000_000 },
    XAF: { exponent: 0, min_amount: 100, max_amount: 2_000_000 },
  },
  markets: {
    KE: {
      name: 'Kenya',
      currency: 'KES',
      language: 'en',
      phone: { country_code: '254', national_digits: 9 },
      rails: {
        mpesa: pushPromptRail('M-Pesa'),
        airtel_money: pushPromptRail('Airtel Money'),
      },
    },
    GH: {
      name: 'Ghana',
      currency: 'GHS',
      language: 'en',
      phone: { country_code: '233', national_digits: 9 },
      rails: {
        mtn_momo: pushPromptRail('MTN MoMo'),
        vodafone_cash: {
          name: 'Telecel Cash',
          type: 'mobile_money',
          customer_fields: ['phone_number'],
          expiry_seconds: 1800,
          instruction: { type: 'ussd_code', ussd_code: '*110#' },
        },
      },
    },
    UG: {
      name: 'Uganda',
      currency: 'UGX',
      language: 'en',
      phone: { country_code: '256', national_digits: 9 },
      rails: {
        mtn_momo: pushPromptRail('MTN MoMo'),
        airtel_money: pushPromptRail('Airtel Money'),
      },
    },
    TZ: {
      name: 'Tanzania',
      currency: 'TZS',
      language: 'en',
      phone: { country_code: '255', national_digits: 9 },
      rails: {
        mpesa: pushPromptRail('M-Pesa'),
        airtel_money: pushPromptRail('Airtel Money'),
      },
    },
    RW: {
      name: 'Rwanda',
      currency: 'RWF',
      language: 'en',
      phone: { country_code: '250', national_digits: 9 },
      rails: {
        mtn_momo: pushPromptRail('MTN MoMo'),
      },
    },
    ZM: {
      name: 'Zambia',
      currency: 'ZMW',
      language: 'en',
      phone: { country_code: '260', national_digits: 9 },
      rails: {
        mtn_momo: pushPromptRail('MTN MoMo'),
        airtel_money: pushPromptRail('Airtel Money'),
      },
    },
    NG: {
      name: 'Nigeria',
      currency: 'NGN',
      language: 'en',
      phone: { country_code: '234', national_digits: 10 },
      rails: {
        bank_transfer: {
          name: 'Bank transfer',
          type: 'bank_transfer',
          customer_fields: ['name'],
          expiry_seconds: 86_400,
          instruction: { type: 'bank_transfer', bank_name: 'Sandbox Bank' },
        },
      },
    },
    CI: {
      name: "Côte d'Ivoire",
      currency: 'XOF',
      language: 'fr',
      phone: { country_code: '225', national_digits: 10 },
      rails: {
        orange_money: orangeMoneyRail(),
        mtn_momo: pushPromptRail('MTN MoMo'),
        wave: redirectRail('Wave', 900),
      },
    },
    SN: {
      name: 'Senegal',
      currency: 'XOF',
      language: 'fr',
      phone: { country_code: '221', national_digits: 9 },
      rails: {
        orange_money: orangeMoneyRail(),
        wave: redirectRail('Wave', 900),
      },
    },
  },
};

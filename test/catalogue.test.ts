// The market and rail catalogue is data: the built-in default covers the contract's markets; an operator file replaces it.
import assert from 'node:assert/strict';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CatalogueError, loadCatalogue, validateCatalogue } from '../src/modules/catalogue/catalogue.js';
import { DEFAULT_CATALOGUE } from '../src/modules/catalogue/default-catalogue.js';
import { newKey, request, startTestApp, type TestApp } from './helpers/harness.js';

const REQUIRED: Record<string, [string, string[]]> = {
  KE: ['KES', ['mpesa', 'airtel_money']],
  GH: ['GHS', ['mtn_momo', 'vodafone_cash']],
  UG: ['UGX', ['mtn_momo', 'airtel_money']],
  TZ: ['TZS', ['mpesa', 'airtel_money']],
  RW: ['RWF', ['mtn_momo']],
  ZM: ['ZMW', ['mtn_momo', 'airtel_money']],
  NG: ['NGN', ['bank_transfer']],
  CI: ['XOF', ['orange_money', 'mtn_momo', 'wave']],
  SN: ['XOF', ['orange_money', 'wave']],
};

describe('built-in catalogue', () => {
  it('covers every market, currency and rail the contract names', () => {
    const c = loadCatalogue(undefined);
    for (const [market, [currency, rails]] of Object.entries(REQUIRED)) {
      assert.equal(c.markets[market]?.currency, currency, market);
      for (const rail of rails) assert.ok(c.markets[market]?.rails[rail], `${market}/${rail}`);
    }
  });

  it('Senegal is French, dials +221 and 9 digits; the CFA francs have no minor unit', () => {
    const c = loadCatalogue(undefined);
    assert.equal(c.markets.SN?.language, 'fr');
    assert.deepEqual(c.markets.SN?.phone, { country_code: '221', national_digits: 9 });
    assert.equal(c.currencies.XOF?.exponent, 0);
    assert.equal(c.currencies.XAF?.exponent, 0);
  });

  it("Wave and Orange Money give the payer the operator's page to open, in both markets", () => {
    const c = loadCatalogue(undefined);
    for (const market of ['CI', 'SN'])
      for (const rail of ['wave', 'orange_money'])
        assert.deepEqual(c.markets[market]?.rails[rail]?.instruction, { type: 'redirect' }, `${market}/${rail}`);
  });

  it('refuses a catalogue whose market names an undefined currency or whose limits are inverted', () => {
    const broken = structuredClone(DEFAULT_CATALOGUE);
    delete (broken.currencies as Record<string, unknown>).KES;
    assert.throws(() => validateCatalogue(broken), CatalogueError);
    const inverted = structuredClone(DEFAULT_CATALOGUE);
    inverted.currencies.KES = { exponent: 2, min_amount: 500, max_amount: 100 };
    assert.throws(() => validateCatalogue(inverted), /min_amount is above max_amount/);
    assert.throws(() => validateCatalogue({ markets: {}, currencies: {}, extra: 1 }), CatalogueError);
  });
});

describe('operator catalogue file', () => {
  let dir: string;
  let t: TestApp;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'catalogue-'));
    const file = path.join(dir, 'catalogue.json');
    await writeFile(
      file,
      JSON.stringify({
        currencies: { SLE: { exponent: 2, min_amount: 1000, max_amount: 2000 } },
        markets: {
          SL: {
            name: 'Sierra Leone',
            currency: 'SLE',
            language: 'en',
            phone: { country_code: '232', national_digits: 8 },
            rails: {
              orange_money: {
                name: 'Orange Money',
                type: 'mobile_money',
                customer_fields: ['phone_number'],
                expiry_seconds: 300,
                instruction: { type: 'push_prompt' },
              },
            },
          },
        },
      }),
    );
    t = await startTestApp({ CATALOGUE_FILE: file });
  });
  after(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the markets, limits and expiry of the file instead of the default', async () => {
    const ok = await request(t, 'POST', '/v1/collections/SL/rails/orange_money', {
      token: t.demoToken,
      idempotencyKey: newKey(),
      body: { amount: 1500, currency: 'SLE', reference: 'sl-1', customer: { phone_number: '+23276123456' } },
    });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(Date.parse(ok.body.expires_at) - Date.parse(ok.body.created_at), 300_000);
    const tooBig = await request(t, 'POST', '/v1/collections/SL/rails/orange_money', {
      token: t.demoToken,
      idempotencyKey: newKey(),
      body: { amount: 2001, currency: 'SLE', reference: 'sl-2', customer: { phone_number: '+23276123456' } },
    });
    assert.equal(tooBig.body.code, 'amount_out_of_range');
    const kenya = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      idempotencyKey: newKey(),
      body: { amount: 1500, currency: 'KES', reference: 'ke', customer: { phone_number: '+254712345678' } },
    });
    assert.equal(kenya.body.code, 'invalid_market');
  });
});

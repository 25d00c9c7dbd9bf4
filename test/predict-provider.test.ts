// Predicting the operator from a phone number (POST /v1/predict-provider and the checkout page's by-token twin):
// every market of the catalogue with real prefixes of each rail, the local and international forms, the 400s with
// their stable codes, fuzzed input never a 500, and only rails the loaded catalogue (CATALOGUE_FILE) offers.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { DEFAULT_CATALOGUE } from '../src/modules/catalogue/default-catalogue.js';
import { assertProblem, request, startTestApp, type ApiResponse, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const predict = (body: unknown, token = t.demoToken): Promise<ApiResponse> =>
  request(t, 'POST', '/v1/predict-provider', { token, body });

interface Expected {
  phone_number: string;
  market: string;
  operator: string;
  rails: string[];
  portability: boolean;
}

async function expectPrediction(body: Record<string, unknown>, expected: Expected) {
  const res = await request(t, 'POST', '/v1/predict-provider', { token: t.demoToken, body });
  assert.equal(res.status, 200, `${JSON.stringify(body)}: ${res.text}`);
  assert.deepEqual(res.body, expected, JSON.stringify(body));
}

/** One real number per operator of each market: [market, number as written locally, E.164, operator, rails]. */
const CASES: readonly (readonly [string, string, string, string, string[]])[] = [
  ['KE', '0712 345 678', '+254712345678', 'Safaricom', ['mpesa']],
  ['KE', '0110 123 456', '+254110123456', 'Safaricom', ['mpesa']],
  ['KE', '0722-000-111', '+254722000111', 'Safaricom', ['mpesa']],
  ['KE', '0733 123 456', '+254733123456', 'Airtel', ['airtel_money']],
  ['KE', '0750 123 456', '+254750123456', 'Airtel', ['airtel_money']],
  ['KE', '0100 123 456', '+254100123456', 'Airtel', ['airtel_money']],
  ['KE', '0771 123 456', '+254771123456', 'Telkom', []],
  ['GH', '024 412 3456', '+233244123456', 'MTN', ['mtn_momo']],
  ['GH', '059 123 4567', '+233591234567', 'MTN', ['mtn_momo']],
  ['GH', '020 123 4567', '+233201234567', 'Telecel', ['vodafone_cash']],
  ['GH', '050 123 4567', '+233501234567', 'Telecel', ['vodafone_cash']],
  ['GH', '026 123 4567', '+233261234567', 'AT', []],
  ['UG', '0772 123 456', '+256772123456', 'MTN', ['mtn_momo']],
  ['UG', '0781 123 456', '+256781123456', 'MTN', ['mtn_momo']],
  ['UG', '0701 234 567', '+256701234567', 'Airtel', ['airtel_money']],
  ['UG', '0752 123 456', '+256752123456', 'Airtel', ['airtel_money']],
  ['TZ', '0754 123 456', '+255754123456', 'Vodacom', ['mpesa']],
  ['TZ', '0784 123 456', '+255784123456', 'Airtel', ['airtel_money']],
  ['TZ', '0655 123 456', '+255655123456', 'Yas (Tigo)', []],
  ['RW', '0788 123 456', '+250788123456', 'MTN', ['mtn_momo']],
  // Airtel Rwanda has no rail in the catalogue: the operator is named, no rail.
  ['RW', '0731 123 456', '+250731123456', 'Airtel', []],
  ['ZM', '0966 123 456', '+260966123456', 'MTN', ['mtn_momo']],
  ['ZM', '0977 123 456', '+260977123456', 'Airtel', ['airtel_money']],
  ['ZM', '0955 123 456', '+260955123456', 'Zamtel', []],
  // Nigeria's only rail is bank transfer: the operator is named, no mobile rail.
  ['NG', '0803 123 4567', '+2348031234567', 'MTN', []],
  ['NG', '0802 123 4567', '+2348021234567', 'Airtel', []],
  ['CI', '07 07 12 34 56', '+2250707123456', 'Orange', ['orange_money', 'wave']],
  ['CI', '05 05 12 34 56', '+2250505123456', 'MTN', ['mtn_momo', 'wave']],
  ['CI', '01 01 12 34 56', '+2250101123456', 'Moov', ['wave']],
  ['SN', '77 123 45 67', '+221771234567', 'Orange', ['orange_money', 'wave']],
  ['SN', '78 123 45 67', '+221781234567', 'Orange', ['orange_money', 'wave']],
  ['SN', '76 123 45 67', '+221761234567', 'Free (Yas)', ['wave']],
];

const PORTS: Record<string, boolean> = {
  KE: true,
  GH: true,
  UG: false,
  TZ: true,
  RW: false,
  ZM: false,
  NG: true,
  CI: true,
  SN: true,
};

describe('POST /v1/predict-provider: every market, every rail', () => {
  it('covers every market and every rail of the default catalogue with a real prefix', () => {
    for (const [code, market] of Object.entries(DEFAULT_CATALOGUE.markets)) {
      assert.ok(
        CASES.some(([m]) => m === code),
        `no case for ${code}`,
      );
      for (const rail of Object.keys(market.rails)) {
        if (market.rails[rail]?.type !== 'mobile_money') continue;
        assert.ok(
          CASES.some(([m, , , , rails]) => m === code && rails[0] === rail),
          `no number predicts ${code}/${rail} first`,
        );
      }
    }
  });

  for (const [market, local, e164, operator, rails] of CASES) {
    it(`${market} ${local}: ${operator} → [${rails.join(', ')}], in the local and international forms`, async () => {
      const expected = { phone_number: e164, market, operator, rails, portability: PORTS[market] as boolean };
      await expectPrediction({ phone_number: local, market }, expected);
      await expectPrediction({ phone_number: e164 }, expected);
      await expectPrediction({ phone_number: `00${e164.slice(1)}` }, expected);
      await expectPrediction({ phone_number: e164.slice(1) }, expected);
      await expectPrediction({ phone_number: e164, market }, expected);
    });
  }

  it('reads the forms people write: spaces, dashes, parentheses, a kept trunk 0, no trunk 0', async () => {
    const safaricom = {
      phone_number: '+254712345678',
      market: 'KE',
      operator: 'Safaricom',
      rails: ['mpesa'],
      portability: true,
    };
    for (const written of ['+254 712 345 678', '+254 (0) 712-345-678', '(+254) 712.345.678', '00 254 712 345 678']) {
      await expectPrediction({ phone_number: written }, safaricom);
    }
    for (const written of ['(0712) 345-678', '712345678', '712 345 678', '254712345678', '0712\u00a0345\u00a0678']) {
      await expectPrediction({ phone_number: written, market: 'KE' }, safaricom);
    }
  });
});

describe('POST /v1/predict-provider: numbers that cannot be ours are 400 with a stable code', () => {
  const refused = async (body: unknown, code: string) => {
    const res = await predict(body);
    assertProblem(res, 400, code);
    return res;
  };

  it('wrong length: too short, too long, a local number missing a digit', async () => {
    const short = await refused({ phone_number: '+25471234567' }, 'phone_number_length');
    assert.deepEqual(short.body.errors, [{ field: 'phone_number', message: 'must have 9 digits after +254' }]);
    await refused({ phone_number: '+2547123456789' }, 'phone_number_length');
    await refused({ phone_number: '071234567', market: 'KE' }, 'phone_number_length');
    await refused({ phone_number: '0712 345 6789', market: 'KE' }, 'phone_number_length');
    await refused({ phone_number: '+225 07 12 34 56' }, 'phone_number_length');
  });

  it('unknown prefix: no operator holds it', async () => {
    const res = await refused({ phone_number: '+254 812 345 678' }, 'phone_number_unknown_prefix');
    assert.equal(res.body.errors[0].field, 'phone_number');
    await refused({ phone_number: '0291234567', market: 'GH' }, 'phone_number_unknown_prefix');
    await refused({ phone_number: '+221 80 123 45 67' }, 'phone_number_unknown_prefix');
  });

  it("not a mobile number: fixed lines, Kenya's machine-to-machine 03", async () => {
    await refused({ phone_number: '020 2222222', market: 'KE' }, 'phone_number_not_mobile');
    await refused({ phone_number: '+254 300 123 456' }, 'phone_number_not_mobile');
    await refused({ phone_number: '+225 27 22 12 34 56' }, 'phone_number_not_mobile');
    await refused({ phone_number: '+221 33 800 00 00' }, 'phone_number_not_mobile');
  });

  it("another country's number, or another market's than the one named", async () => {
    await refused({ phone_number: '+44 7700 900123' }, 'phone_number_country');
    await refused({ phone_number: '+1 212 555 0100' }, 'phone_number_country');
    const other = await refused({ phone_number: '+233 24 412 3456', market: 'KE' }, 'phone_number_country');
    assert.match(other.body.detail, /Ghana/);
  });

  it('a local number without market is 400 market_required; an unknown market is 400 invalid_market', async () => {
    await refused({ phone_number: '0712 345 678' }, 'market_required');
    await refused({ phone_number: '712345678' }, 'market_required');
    await refused({ phone_number: '0712345678', market: 'XX' }, 'invalid_market');
    await refused({ phone_number: '0712345678', market: 'ke' }, 'invalid_market');
  });

  it('malformed bodies: letters, an empty number, a number as a JSON number, unknown fields', async () => {
    await refused({ phone_number: '0712abc678', market: 'KE' }, 'validation_failed');
    await refused({ phone_number: '+254+712345678' }, 'validation_failed');
    await refused({ phone_number: '' }, 'validation_failed');
    await refused({ phone_number: 254712345678 }, 'validation_failed');
    await refused({ phone_number: '+254712345678', operator: 'x' }, 'validation_failed');
    await refused({}, 'validation_failed');
  });

  it('any input at all is answered 200 or 400, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            phone_number: fc.oneof(
              fc.string({ maxLength: 40 }),
              fc.stringMatching(/^[+0 ()-]?[0-9 ()-]{0,20}$/),
              fc.constantFrom('+254', '00', '+', '0', '(((', '٠٧١٢٣٤٥٦٧٨'),
            ),
            market: fc.oneof(fc.constantFrom('KE', 'CI', 'NG', 'SN', 'XX', ''), fc.string({ maxLength: 10 })),
          },
          { requiredKeys: [] },
        ),
        async (body) => {
          const res = await predict(body);
          assert.ok(res.status === 200 || res.status === 400, `${JSON.stringify(body)} → ${res.status} ${res.text}`);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('integrator tokens only: none is 401, an admin token 403', async () => {
    assertProblem(
      await request(t, 'POST', '/v1/predict-provider', { body: { phone_number: '+254712345678' } }),
      401,
      'unauthorized',
    );
    assertProblem(await predict({ phone_number: '+254712345678' }, t.adminToken), 403, 'forbidden');
  });
});

describe("the checkout page's prediction (POST /v1/checkout/by-token/{token}/predict-provider)", () => {
  const session = async (market: string, currency: string): Promise<string> => {
    const res = await request(t, 'POST', '/v1/checkout/sessions', {
      token: t.demoToken,
      body: { amount: 5000, currency, market, redirect_url: 'https://shop.example/thanks' },
    });
    assert.equal(res.status, 201, res.text);
    return String(res.body.session_url).split('/checkout/')[1] as string;
  };

  it("answers in the session's market from a local number, with the token alone", async () => {
    const token = await session('CI', 'XOF');
    const res = await request(t, 'POST', `/v1/checkout/by-token/${token}/predict-provider`, {
      body: { phone_number: '05 05 12 34 56' },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body, {
      phone_number: '+2250505123456',
      market: 'CI',
      operator: 'MTN',
      rails: ['mtn_momo', 'wave'],
      portability: true,
    });
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });

  it("another market's number is 400 phone_number_country; an unknown token 404; a bad body 400", async () => {
    const token = await session('KE', 'KES');
    const url = `/v1/checkout/by-token/${token}/predict-provider`;
    assertProblem(
      await request(t, 'POST', url, { body: { phone_number: '+233244123456' } }),
      400,
      'phone_number_country',
    );
    assertProblem(
      await request(t, 'POST', url, { body: { phone_number: '0712345678', market: 'KE' } }),
      400,
      'validation_failed',
    );
    assertProblem(
      await request(t, 'POST', `/v1/checkout/by-token/${'x'.repeat(43)}/predict-provider`, {
        body: { phone_number: '0712345678' },
      }),
      404,
      'not_found',
    );
  });
});

describe('with a CATALOGUE_FILE: only the rails the loaded catalogue offers', () => {
  it('KE without mpesa names no rail for Safaricom; CI without wave names only the operator rail', async () => {
    const catalogue = structuredClone(DEFAULT_CATALOGUE);
    const ke = catalogue.markets.KE;
    const ci = catalogue.markets.CI;
    assert.ok(ke && ci);
    delete ke.rails.mpesa;
    delete ci.rails.wave;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'predict-catalogue-'));
    const file = path.join(dir, 'catalogue.json');
    writeFileSync(file, JSON.stringify(catalogue));
    const other = await startTestApp({ CATALOGUE_FILE: file });
    try {
      const ask = (body: unknown) =>
        request(other, 'POST', '/v1/predict-provider', { token: other.demoToken, body }).then((r) => {
          assert.equal(r.status, 200, r.text);
          return r.body as Expected;
        });
      assert.deepEqual((await ask({ phone_number: '+254712345678' })).rails, []);
      assert.deepEqual((await ask({ phone_number: '+254733123456' })).rails, ['airtel_money']);
      assert.deepEqual((await ask({ phone_number: '+2250707123456' })).rails, ['orange_money']);
      assert.deepEqual((await ask({ phone_number: '+2250101123456' })).rails, []);
    } finally {
      await other.close();
    }
  });
});

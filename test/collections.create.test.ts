// Create a collection, POST /v1/collections/{market}/rails/{rail}: every status of the spec's error table, and the
// record it returns.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createCollection,
  newKey,
  request,
  startTestApp,
  validCollection,
  type TestApp,
  assertProblem,
} from './helpers/harness.js';
import { isTransactionControl, isWrite, statementsSent } from './helpers/statements.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const post = (
  path: string,
  body: unknown,
  opts: { token?: string; key?: string | null; headers?: Record<string, string> } = {},
) =>
  request(t, 'POST', path, {
    token: opts.token === undefined ? t.demoToken : opts.token,
    body,
    idempotencyKey: opts.key === null ? undefined : (opts.key ?? newKey()),
    headers: opts.headers,
  });

describe('create success: 201 with the complete Collection record', () => {
  it('returns every field of the spec, status created, expiry from the rail', async () => {
    const body = validCollection({ metadata: { order_id: 'A-1', nested: { x: [1, 2] } } });
    const res = await post('/v1/collections/KE/rails/mpesa', body);
    assert.equal(res.status, 201);
    const c = res.body;
    assert.deepEqual(Object.keys(c).sort(), [
      'amount',
      'collection_id',
      'created_at',
      'currency',
      'customer',
      'expires_at',
      'failure_reason',
      'integrator_id',
      'market',
      'metadata',
      'payment_instruction',
      'provider_receipt',
      'rail',
      'reference',
      'status',
      'updated_at',
    ]);
    assert.equal(c.failure_reason, null);
    assert.equal(c.provider_receipt, null);
    assert.match(c.collection_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(c.integrator_id, t.demoWorkspaceId);
    assert.equal(c.market, 'KE');
    assert.equal(c.rail, 'mpesa');
    assert.equal(c.amount, 1500);
    assert.equal(c.currency, 'KES');
    assert.equal(c.reference, body.reference);
    assert.equal(c.status, 'created');
    assert.deepEqual(c.customer, body.customer);
    assert.deepEqual(c.metadata, { order_id: 'A-1', nested: { x: [1, 2] } });
    assert.equal(c.payment_instruction.type, 'push_prompt');
    assert.match(c.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(c.updated_at, c.created_at);
    assert.equal(Date.parse(c.expires_at) - Date.parse(c.created_at), 600_000);
    assert.equal(res.headers.get('location'), `/v1/collections/${c.collection_id}`);
    assert.equal(res.headers.get('api-version'), '2.5.0');

    const read = await request(t, 'GET', `/v1/collections/${c.collection_id}`, { token: t.demoToken });
    assert.equal(read.status, 200);
    assert.deepEqual(read.body, c);
  });

  it('writes the collection.created event and its outbox row in the same transaction as the collection', async () => {
    const res = await createCollection(t, t.demoToken);
    assert.equal(res.status, 201);
    const { rows } = await t.db.query(
      `SELECT e.type, e.data, o.id AS outbox_id, o.published_at FROM events e JOIN outbox o ON o.event_id = e.id
       WHERE e.workspace_id = $1 AND e.object_id = $2`,
      [t.demoWorkspaceId, res.body.collection_id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0].type, 'collection.created');
    assert.deepEqual(rows[0].data, res.body);
    assert.equal(rows[0].published_at, null);
  });

  it('gives the payment instruction by rail type: USSD code, bank account, or the operator page once given', async () => {
    const ussd = await post(
      '/v1/collections/GH/rails/vodafone_cash',
      validCollection({ currency: 'GHS', amount: 5000, customer: { phone_number: '+233201234567' } }),
    );
    assert.equal(ussd.status, 201, ussd.text);
    assert.equal(ussd.body.payment_instruction.type, 'ussd_code');
    assert.equal(ussd.body.payment_instruction.ussd_code, '*110#');
    assert.match(ussd.body.payment_instruction.message, /^Dial \*110# from/);

    const french = await post(
      '/v1/collections/CI/rails/mtn_momo',
      validCollection({ currency: 'XOF', amount: 5000, customer: { phone_number: '+2250501020304' } }),
    );
    assert.equal(french.status, 201, french.text);
    assert.match(french.body.payment_instruction.message, /^Validez la demande MTN MoMo de XOF 5\s000/); // francophone market

    const bank = await post(
      '/v1/collections/NG/rails/bank_transfer',
      validCollection({ currency: 'NGN', amount: 500_000, customer: { name: 'Ada Obi' } }),
    );
    assert.equal(bank.status, 201, bank.text);
    assert.equal(bank.body.payment_instruction.type, 'bank_transfer');
    assert.match(bank.body.payment_instruction.account_number, /^\d{10}$/);
    assert.equal(Date.parse(bank.body.expires_at) - Date.parse(bank.body.created_at), 86_400_000);

    // A redirect rail: the operator gives its page with its answer, so the instruction is null at create; the row
    // keeps the redirect's message, waiting for the address.
    for (const [path, phone] of [
      ['/v1/collections/CI/rails/wave', '+2250701020304'],
      ['/v1/collections/SN/rails/wave', '+221771234567'],
      ['/v1/collections/SN/rails/orange_money', '+221771234567'],
    ] as const) {
      const res = await post(
        path,
        validCollection({ currency: 'XOF', amount: 5000, customer: { phone_number: phone } }),
      );
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.payment_instruction, null, path);
      const { rows } = await t.db.query(
        'SELECT payment_instruction FROM collections WHERE workspace_id = $1 AND id = $2',
        [t.demoWorkspaceId, res.body.collection_id],
      );
      assert.equal(rows[0].payment_instruction.type, 'redirect', path);
      assert.equal(rows[0].payment_instruction.url, undefined, path);
      assert.match(rows[0].payment_instruction.message, /^Ouvrez la page (Wave|Orange Money) pour payer XOF 5\s000/);
    }
  });

  it("Senegal takes XOF in whole francs from +221 numbers; another country's number is refused", async () => {
    const res = await post(
      '/v1/collections/SN/rails/wave',
      validCollection({ currency: 'XOF', amount: 100, customer: { phone_number: '+221771234567' } }),
    );
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.amount, 100);
    assertProblem(
      await post(
        '/v1/collections/SN/rails/wave',
        validCollection({ currency: 'XOF', amount: 100, customer: { phone_number: '+2250701020304' } }),
      ),
      400,
      'invalid_customer',
    );
    assertProblem(
      await post(
        '/v1/collections/SN/rails/wave',
        validCollection({ currency: 'GHS', amount: 100, customer: { phone_number: '+221771234567' } }),
      ),
      400,
      'invalid_currency',
    );
  });

  it('stores metadata as {} when none is sent', async () => {
    const body = validCollection();
    delete (body as Record<string, unknown>).metadata;
    const res = await post('/v1/collections/GH/rails/mtn_momo', {
      ...body,
      currency: 'GHS',
      customer: { phone_number: '+233241234567' },
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.metadata, {});
  });
});

describe('create in one statement', () => {
  it('a create with a fresh key sends the token check and one write statement: no BEGIN, COMMIT or lock of its own', async () => {
    const key = newKey();
    const { result: res, statements: sent } = await statementsSent(t.db, () =>
      post('/v1/collections/KE/rails/mpesa', validCollection(), { key }),
    );
    // The rate limiter's periodic report shares the pool and may land in the window: it is not the request's.
    const statements = sent.filter((s) => !/rate_limit_buckets/.test(s.text));
    assert.equal(res.status, 201, res.text);
    const texts = statements.map((s) => s.text.replace(/\s+/g, ' ').slice(0, 80));
    assert.deepEqual(
      statements.filter((s) => isTransactionControl(s.text)).map((s) => s.text),
      [],
      `no transaction control: ${texts.join(' | ')}`,
    );
    const writes = statements.filter((s) => isWrite(s.text));
    assert.equal(writes.length, 1, `one write statement: ${texts.join(' | ')}`);
    const write = writes[0]?.text ?? '';
    for (const table of ['idempotency_keys', 'collections', 'events', 'outbox'])
      assert.match(write, new RegExp(`INSERT INTO ${table}\\b`), `the one statement writes ${table}`);
    assert.equal(write.match(/INSERT INTO/g)?.length, 4, 'and nothing else');
    assert.ok(
      statements.every((s) => s.error === undefined),
      `no statement failed: ${texts.join(' | ')}`,
    );
    // The token check (a read) and the write: two round trips in all, where the transactional create sent six.
    assert.equal(statements.length, 2, texts.join(' | '));
    assert.doesNotMatch(statements[0]?.text ?? '', /INSERT|UPDATE|DELETE/i, 'the first is the token check');

    // What the one statement wrote is all there, and its stored answer is what the client got.
    const id = res.body.collection_id as string;
    const { rows } = await t.db.query(
      `SELECT (SELECT count(*)::int FROM collections WHERE workspace_id = $1 AND id = $2) AS collections,
              (SELECT count(*)::int FROM events e JOIN outbox o ON o.event_id = e.id
                WHERE e.workspace_id = $1 AND e.object_id = $2 AND e.type = 'collection.created') AS events,
              (SELECT response_body FROM idempotency_keys WHERE workspace_id = $1 AND key = $3) AS stored`,
      [t.demoWorkspaceId, id, key],
    );
    assert.deepEqual(rows[0], { collections: 1, events: 1, stored: res.text });
  });
});

describe('create errors: 400', () => {
  it('400 invalid_market for an unknown market', async () => {
    assertProblem(await post('/v1/collections/XX/rails/mpesa', validCollection()), 400, 'invalid_market');
  });

  it('400 invalid_market for a lowercase market code', async () => {
    assertProblem(await post('/v1/collections/ke/rails/mpesa', validCollection()), 400, 'invalid_market');
  });

  it('400 invalid_rail for a rail the market does not offer', async () => {
    assertProblem(await post('/v1/collections/KE/rails/mtn_momo', validCollection()), 400, 'invalid_rail');
  });

  it("400 invalid_currency when the currency is not the market's", async () => {
    const res = await post('/v1/collections/KE/rails/mpesa', validCollection({ currency: 'UGX' }));
    assertProblem(res, 400, 'invalid_currency');
    assert.deepEqual(res.body.errors, [{ field: 'currency', message: 'must be KES' }]);
  });

  it('400 invalid_customer with a field error for a phone number outside the market', async () => {
    const res = await post(
      '/v1/collections/KE/rails/mpesa',
      validCollection({ customer: { phone_number: '+233241234567' } }),
    );
    assertProblem(res, 400, 'invalid_customer');
    assert.equal(res.body.errors[0].field, 'customer.phone_number');
  });

  it('400 invalid_customer for a phone number that is not E.164', async () => {
    for (const phone of ['0712345678', '+25471234567', '+2547123456789', '+254 712 345 678']) {
      const res = await post('/v1/collections/KE/rails/mpesa', validCollection({ customer: { phone_number: phone } }));
      assertProblem(res, 400, 'invalid_customer');
    }
  });

  it('400 invalid_customer when a mobile-money rail gets no phone number', async () => {
    const res = await post('/v1/collections/KE/rails/mpesa', validCollection({ customer: { name: 'Wanjiku' } }));
    assertProblem(res, 400, 'invalid_customer');
    assert.deepEqual(res.body.errors, [{ field: 'customer.phone_number', message: 'is required on M-Pesa' }]);
  });

  it('400 invalid_customer for an unknown customer field or a wrong type inside customer', async () => {
    assertProblem(
      await post(
        '/v1/collections/KE/rails/mpesa',
        validCollection({ customer: { phone_number: '+254712345678', pin: '1234' } }),
      ),
      400,
      'invalid_customer',
    );
    assertProblem(
      await post('/v1/collections/KE/rails/mpesa', validCollection({ customer: { phone_number: 254712345678 } })),
      400,
      'invalid_customer',
    );
  });

  it('400 validation_failed for a non-integer, string or missing amount, and for unknown fields', async () => {
    for (const amount of [15.5, '1500', null]) {
      const res = await post('/v1/collections/KE/rails/mpesa', validCollection({ amount }));
      assertProblem(res, 400, 'validation_failed');
      assert.equal(res.body.errors[0].field, 'amount');
    }
    const missing = validCollection();
    delete (missing as Record<string, unknown>).amount;
    assertProblem(await post('/v1/collections/KE/rails/mpesa', missing), 400, 'validation_failed');
    const extra = await post('/v1/collections/KE/rails/mpesa', validCollection({ amuont: 5 }));
    assertProblem(extra, 400, 'validation_failed');
    assert.deepEqual(extra.body.errors, [{ field: 'amuont', message: 'is not a known field' }]);
  });

  it('400 validation_failed, never 500, for text PostgreSQL cannot store: NUL characters and unpaired surrogates', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ reference: 'r\u0000x' }, 'reference'],
      [{ metadata: { a: '\u0000' } }, 'metadata.a'],
      [{ metadata: { a: '\ud800' } }, 'metadata.a'],
      [{ metadata: { ['k\u0000']: 1 } }, 'metadata.k\u0000'],
      [{ reference: 'x\udc00' }, 'reference'],
    ];
    for (const [override, field] of cases) {
      const res = await post('/v1/collections/KE/rails/mpesa', validCollection(override));
      assertProblem(res, 400, 'validation_failed');
      assert.equal(res.body.errors[0].field, field);
    }
    const emoji = await post(
      '/v1/collections/KE/rails/mpesa',
      validCollection({ reference: 'order 🎉', metadata: { note: 'Asante sana 👍🏾' } }),
    );
    assert.equal(emoji.status, 201, emoji.text);
  });

  it('400 validation_failed, never 500, for metadata nested deeper than 32 levels', async () => {
    // Written by hand: JSON.stringify itself would overflow on 5000 levels.
    const body = JSON.stringify(validCollection({ metadata: { a: '@' } })).replace(
      '"@"',
      `${'['.repeat(5000)}1${']'.repeat(5000)}`,
    );
    const deep = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      rawBody: body,
      headers: { 'content-type': 'application/json' },
      idempotencyKey: newKey(),
    });
    assertProblem(deep, 400, 'validation_failed');
    let ok: unknown = 'leaf';
    for (let i = 0; i < 20; i++) ok = { n: ok };
    assert.equal((await post('/v1/collections/KE/rails/mpesa', validCollection({ metadata: { a: ok } }))).status, 201);
  });

  it('400 invalid_json for a malformed body', async () => {
    const res = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      token: t.demoToken,
      rawBody: '{"amount": 15',
      headers: { 'content-type': 'application/json' },
      idempotencyKey: newKey(),
    });
    assertProblem(res, 400, 'invalid_json');
  });
});

describe('create errors: 401', () => {
  it('401 unauthorized without a bearer token', async () => {
    const res = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
      body: validCollection(),
      idempotencyKey: newKey(),
    });
    assertProblem(res, 401, 'unauthorized');
  });

  it('401 comes before validation: a bad body without a token is still 401', async () => {
    const res = await request(t, 'POST', '/v1/collections/XX/rails/nope', { body: { amount: 'x' } });
    assertProblem(res, 401, 'unauthorized');
  });
});

describe('create errors: 422', () => {
  it('422 idempotency_key_missing without an Idempotency-Key', async () => {
    assertProblem(
      await post('/v1/collections/KE/rails/mpesa', validCollection(), { key: null }),
      422,
      'idempotency_key_missing',
    );
  });

  it('422 idempotency_key_invalid for a key longer than 255 characters or with spaces', async () => {
    assertProblem(
      await post('/v1/collections/KE/rails/mpesa', validCollection(), { key: 'k'.repeat(256) }),
      422,
      'idempotency_key_invalid',
    );
    assertProblem(
      await post('/v1/collections/KE/rails/mpesa', validCollection(), { key: 'has space' }),
      422,
      'idempotency_key_invalid',
    );
  });

  it('422 amount_out_of_range below the minimum, at zero, negative, and above the maximum', async () => {
    for (const amount of [99, 0, -100, 25_000_001, 2 ** 53 + 2]) {
      const res = await post('/v1/collections/KE/rails/mpesa', validCollection({ amount }));
      assertProblem(res, 422, 'amount_out_of_range');
      assert.equal(res.body.errors[0].field, 'amount');
    }
  });

  it('accepts the exact limits', async () => {
    assert.equal((await post('/v1/collections/KE/rails/mpesa', validCollection({ amount: 100 }))).status, 201);
    assert.equal((await post('/v1/collections/KE/rails/mpesa', validCollection({ amount: 25_000_000 }))).status, 201);
  });
});

describe('request limits and media types', () => {
  it('413 payload_too_large over 1 MiB', async () => {
    const big = validCollection({ metadata: { blob: 'x'.repeat(1024 * 1024) } });
    assertProblem(await post('/v1/collections/KE/rails/mpesa', big), 413, 'payload_too_large');
  });

  it('415 unsupported_media_type for a non-JSON body', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await request(t, 'POST', '/v1/collections/KE/rails/mpesa', {
        token: t.demoToken,
        rawBody: 'amount=1500',
        headers: { 'content-type': type },
        idempotencyKey: newKey(),
      });
      assertProblem(res, 415, 'unsupported_media_type');
    }
  });

  it('400 validation_failed for metadata over 16 KiB', async () => {
    const res = await post(
      '/v1/collections/KE/rails/mpesa',
      validCollection({ metadata: { blob: 'x'.repeat(20_000) } }),
    );
    assertProblem(res, 400, 'validation_failed');
    assert.equal(res.body.errors[0].field, 'metadata');
  });

  it('nothing is stored for a rejected request', async () => {
    const before = await t.db.query('SELECT count(*)::int AS n FROM collections');
    await post('/v1/collections/XX/rails/mpesa', validCollection());
    await post('/v1/collections/KE/rails/mpesa', validCollection({ amount: 1 }));
    const afterCount = await t.db.query('SELECT count(*)::int AS n FROM collections');
    assert.equal(afterCount.rows[0].n, before.rows[0].n);
  });
});

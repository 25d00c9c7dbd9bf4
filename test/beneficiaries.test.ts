// Beneficiaries: create, list, read, and deactivate (DELETE /v1/api/beneficiaries/{beneficiaryId}), through HTTP on a
// real database.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertProblem, createWorkspace, newKey, request, startTestApp, type TestApp } from './helpers/harness.js';

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(async () => t.close());

const wallet = (overrides: Record<string, unknown> = {}) => ({
  name: 'Amina Wanjiru',
  market: 'KE',
  rail: 'mpesa',
  phone_number: '+254712345678',
  reference: 'supplier-7',
  metadata: { supplier: '7' },
  ...overrides,
});
const bank = (overrides: Record<string, unknown> = {}) => ({
  name: 'Chinedu Okafor',
  market: 'NG',
  rail: 'bank_transfer',
  bank_code: '058',
  account_number: '0123456789',
  ...overrides,
});
const create = (body: unknown, token = t.demoToken, key?: string) =>
  request(t, 'POST', '/v1/api/beneficiaries', { token, body, ...(key === undefined ? {} : { idempotencyKey: key }) });

describe('create', () => {
  it('a mobile-money wallet: 201 with the record, active, currency from the market, Location', async () => {
    const res = await create(wallet());
    assert.equal(res.status, 201, res.text);
    const b = res.body;
    assert.deepEqual(Object.keys(b).sort(), [
      'account_number',
      'bank_code',
      'beneficiary_id',
      'created_at',
      'currency',
      'deactivated_at',
      'market',
      'metadata',
      'name',
      'phone_number',
      'rail',
      'reference',
      'status',
      'updated_at',
    ]);
    assert.equal(b.status, 'active');
    assert.equal(b.currency, 'KES');
    assert.equal(b.phone_number, '+254712345678');
    assert.equal(b.bank_code, null);
    assert.equal(b.deactivated_at, null);
    assert.deepEqual(b.metadata, { supplier: '7' });
    assert.equal(res.headers.get('location'), `/v1/api/beneficiaries/${b.beneficiary_id}`);
  });

  it('a bank account in NG: 201, metadata defaults to {}', async () => {
    const res = await create(bank());
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.currency, 'NGN');
    assert.equal(res.body.account_number, '0123456789');
    assert.equal(res.body.phone_number, null);
    assert.deepEqual(res.body.metadata, {});
  });

  it('details that do not fit the rail are 400 invalid_customer with field errors', async () => {
    const cases: [unknown, string][] = [
      [wallet({ phone_number: '+233241234567' }), 'phone_number'],
      [wallet({ phone_number: undefined }), 'phone_number'],
      [wallet({ account_number: '0123456789' }), 'account_number'],
      [bank({ account_number: undefined }), 'account_number'],
      [bank({ bank_code: undefined }), 'bank_code'],
      [bank({ phone_number: '+2348012345678' }), 'phone_number'],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      assertProblem(res, 400, 'invalid_customer');
      assert.ok(
        res.body.errors.some((e: { field: string }) => e.field === field),
        `${field}: ${res.text}`,
      );
    }
  });

  it('an unknown market or rail, a malformed account number, an unknown field: 400 with the stable codes', async () => {
    assertProblem(await create(wallet({ market: 'XX' })), 400, 'invalid_market');
    assertProblem(await create(wallet({ rail: 'wave' })), 400, 'invalid_rail');
    assertProblem(await create(bank({ account_number: '12-34' })), 400, 'validation_failed');
    assertProblem(await create({ ...wallet(), iban: 'x' }), 400, 'validation_failed');
    assertProblem(await create(wallet({ name: '' })), 400, 'validation_failed');
  });

  it('an Idempotency-Key makes a retried create the same beneficiary', async () => {
    const key = newKey();
    const first = await create(wallet({ reference: 'retry' }), t.demoToken, key);
    const again = await create(wallet({ reference: 'retry' }), t.demoToken, key);
    assert.equal(first.status, 201);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assertProblem(await create(wallet({ reference: 'other' }), t.demoToken, key), 422, 'idempotency_key_reused');
  });
});

describe('DELETE /v1/api/beneficiaries/{beneficiaryId} deactivates', () => {
  it('200 with status inactive and deactivated_at; again: the same record; reads show it inactive', async () => {
    const b = (await create(wallet())).body;
    const res = await request(t, 'DELETE', `/v1/api/beneficiaries/${b.beneficiary_id}`, { token: t.demoToken });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.status, 'inactive');
    assert.match(res.body.deactivated_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.ok(Date.parse(res.body.deactivated_at) >= Date.parse(b.created_at));
    assert.equal(res.body.updated_at, res.body.deactivated_at);
    const again = await request(t, 'DELETE', `/v1/api/beneficiaries/${b.beneficiary_id}`, { token: t.demoToken });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, res.body);
    const read = await request(t, 'GET', `/v1/api/beneficiaries/${b.beneficiary_id}`, { token: t.demoToken });
    assert.deepEqual(read.body, res.body);
  });

  it("another workspace's beneficiary, an unknown id, a malformed id: 404, and nothing changes", async () => {
    const b = (await create(wallet())).body;
    const other = await createWorkspace(t, 'beneficiaries-other');
    for (const [token, id] of [
      [other.token, b.beneficiary_id],
      [t.demoToken, '01890a5d-ac96-774b-bcce-b302099a8057'],
      [t.demoToken, 'not-an-id'],
    ] as const) {
      assertProblem(await request(t, 'DELETE', `/v1/api/beneficiaries/${id}`, { token }), 404, 'not_found');
      assertProblem(await request(t, 'GET', `/v1/api/beneficiaries/${id}`, { token }), 404, 'not_found');
    }
    assert.equal(
      (await request(t, 'GET', `/v1/api/beneficiaries/${b.beneficiary_id}`, { token: t.demoToken })).body.status,
      'active',
    );
  });

  it('no token: 401', async () => {
    assertProblem(
      await request(t, 'DELETE', '/v1/api/beneficiaries/01890a5d-ac96-774b-bcce-b302099a8057'),
      401,
      'unauthorized',
    );
  });
});

describe('list', () => {
  it('newest first, paged by cursor, filtered by status, scoped to the workspace', async () => {
    const ws = await createWorkspace(t, 'beneficiaries-list');
    const made: string[] = [];
    for (let i = 0; i < 5; i += 1)
      made.push((await create(wallet({ reference: `r${i}` }), ws.token)).body.beneficiary_id);
    await request(t, 'DELETE', `/v1/api/beneficiaries/${made[1]}`, { token: ws.token });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { data: { beneficiary_id: string }[]; next_cursor: string | null } } =
        await request(
          t,
          'GET',
          `/v1/api/beneficiaries?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          { token: ws.token },
        );
      assert.equal(page.status, 200);
      seen.push(...page.body.data.map((b) => b.beneficiary_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, [...made].reverse());
    const inactive = await request(t, 'GET', '/v1/api/beneficiaries?status=inactive', { token: ws.token });
    assert.deepEqual(
      inactive.body.data.map((b: { beneficiary_id: string }) => b.beneficiary_id),
      [made[1]],
    );
    assertProblem(
      await request(t, 'GET', '/v1/api/beneficiaries?limit=0', { token: ws.token }),
      400,
      'validation_failed',
    );
    assertProblem(
      await request(t, 'GET', '/v1/api/beneficiaries?cursor=forged.x', { token: ws.token }),
      400,
      'invalid_cursor',
    );
  });
});

// PROVIDERS_FILE's connectors: a mistake stops the start with a message naming the entry and the field; secrets may
// come from the environment; a rail has one provider; connectors serve sandbox rails instead of the simulator.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import { loadCatalogue, MarketCatalogue } from '../src/modules/catalogue/catalogue.js';
import { planProviders } from '../src/modules/providers/providers.registry.js';
import { DARAJA_FAKE_CERTIFICATE, initiatorPasswordOf } from '../fakes/mpesa-daraja.js';
import { securityCredential } from '../src/modules/providers/mpesa-daraja/daraja.connector.js';
import { readSecrets, WaveEntry } from '../src/modules/providers/connector-config.js';
import { SecretBox } from '../src/platform/secret-box.js';
import { compileBody } from '../src/platform/validation.js';
import { DARAJA_ENTRY } from './helpers/connectors.js';
import { npmStartArgs } from './helpers/start-command.js';

const catalogue = new MarketCatalogue(loadCatalogue(undefined));
let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'connectors-config-'));
});
after(async () => rm(dir, { recursive: true, force: true }));

const daraja = DARAJA_ENTRY;
const momo = {
  type: 'mtn_momo',
  name: 'mtn',
  rails: ['GH/mtn_momo', 'UG/mtn_momo'],
  base_url: 'https://momo.example.com',
  callback_token: 'b'.repeat(24),
  target_environment: 'mtnghana',
  collection: { subscription_key: 'k', api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01', api_key: 'a' },
  disbursement: { subscription_key: 'k', api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02', api_key: 'a' },
};
const airtel = {
  type: 'airtel_money',
  name: 'airtel',
  rails: ['KE/airtel_money'],
  base_url: 'https://openapiuat.airtel.africa',
  callback_token: 'c'.repeat(24),
  client_id: 'i',
  client_secret: 's',
  country: 'KE',
  currency: 'KES',
  pin: 'p',
};

async function plan(content: unknown, env: NodeJS.ProcessEnv = {}, settings: Record<string, string> = {}) {
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(content));
  return planProviders(loadConfig({ PROVIDERS_FILE: file, ...settings }), catalogue, env);
}

describe('PROVIDERS_FILE connectors', () => {
  it('the three kinds in the documented shape run their rails; the rest stay on the simulator; gateways may be absent', async () => {
    const p = await plan({ connectors: [daraja, momo, airtel] });
    assert.equal(p.rails.get('KE/mpesa'), 'mkopo');
    assert.equal(p.rails.get('GH/mtn_momo'), 'mtn');
    assert.equal(p.rails.get('UG/mtn_momo'), 'mtn');
    assert.equal(p.rails.get('KE/airtel_money'), 'airtel');
    assert.equal(p.rails.get('TZ/mpesa'), 'sandbox');
    assert.equal(p.simulated, true);
    assert.equal((await plan({ connectors: [daraja], gateways: [] })).rails.get('KE/mpesa'), 'mkopo');
  });

  it('a secret may be {"env": NAME}; an unset variable stops the start naming the entry and the field', async () => {
    const withEnv = {
      ...daraja,
      consumer_secret: { env: 'DARAJA_SECRET' },
      callback_token: { env: 'DARAJA_CALLBACK_TOKEN' },
    };
    const p = await plan(
      { connectors: [withEnv] },
      { DARAJA_SECRET: 'from-env', DARAJA_CALLBACK_TOKEN: 'd'.repeat(20) },
    );
    assert.equal((p.connectors[0] as unknown as { consumer_secret: string }).consumer_secret, 'from-env');
    await assert.rejects(plan({ connectors: [withEnv] }, { DARAJA_CALLBACK_TOKEN: 'd'.repeat(20) }), (err: Error) => {
      assert.ok(err instanceof ConfigError);
      assert.match(
        err.message,
        /connector 'mkopo' \(connectors\[0\], mpesa_daraja\): field consumer_secret names environment variable DARAJA_SECRET, which is not set/,
      );
      return true;
    });
  });

  it('mistakes are refused with the entry and the field named', async () => {
    const noB2c: Record<string, unknown> = { ...daraja };
    delete noB2c.b2c;
    const cases: [unknown, RegExp][] = [
      [{ connectors: [noB2c] }, /connector 'mkopo' \(connectors\[0\], mpesa_daraja\): field b2c is required/],
      [{ connectors: [{ ...daraja, shortcode: 'abc' }] }, /connector 'mkopo'.*field shortcode/],
      [{ connectors: [{ ...daraja, callback_token: 'short' }] }, /field callback_token/],
      [
        { connectors: [{ ...daraja, base_url: 'http://daraja.example.com' }] },
        /connector 'mkopo'.*field base_url must be an https URL/,
      ],
      [{ connectors: [{ ...daraja, extra: 1 }] }, /field extra is not a known field/],
      [{ connectors: [{ ...daraja, name: 'safaricom' }] }, /'safaricom' in the callback URL/],
      [{ connectors: [{ ...daraja, transaction_type: 'CustomerBuyGoodsOnline' }] }, /field till_number is required/],
      [
        { connectors: [{ ...daraja, rails: ['TZ/mpesa'] }] },
        /connector 'mkopo' field rails: TZ\/mpesa: Daraja runs KE\/mpesa/,
      ],
      [{ connectors: [{ ...momo, rails: ['KE/mpesa'] }] }, /runs mtn_momo rails only/],
      [{ connectors: [{ ...airtel, rails: ['UG/airtel_money'] }] }, /serves KE in KES/],
      [{ connectors: [{ ...airtel, rails: ['KE/pigeon'] }] }, /the catalogue has no rail KE\/pigeon/],
      [
        { connectors: [{ ...momo, collection: { ...momo.collection, api_user: 'nope' } }] },
        /field collection.api_user/,
      ],
      [{ connectors: [{ ...daraja, type: 'mpesa_g2' }] }, /field connectors.0.type/],
      [{ connectors: [{ ...airtel, rails: ['KE/mpesa'] }] }, /an airtel_money connector runs airtel_money rails only/],
      // Two connectors that may each run the rail: only the one-provider-per-rail rule can refuse them.
      [
        { connectors: [momo, { ...momo, name: 'mtn2', callback_token: 'e'.repeat(24) }] },
        /rail GH\/mtn_momo is given to both 'mtn' and 'mtn2'/,
      ],
      [{ connectors: [daraja, { ...daraja }] }, /the name 'mkopo' is used twice/],
      [
        {
          connectors: [daraja],
          gateways: [
            {
              name: 'acme',
              base_url: 'https://gw.example',
              api_key: 'k',
              callback_secret: 'x'.repeat(16),
              rails: ['KE/mpesa'],
            },
          ],
        },
        /KE\/mpesa is given to both 'acme' and 'mkopo'/,
      ],
    ];
    for (const [content, message] of cases) await assert.rejects(plan(content), message);
  });

  it('a Wave entry in the documented shape is valid, and its secrets may be literals, {"env"} or {"sealed"}', () => {
    const wave = {
      type: 'wave',
      name: 'wave',
      rails: ['SN/wave', 'CI/wave'],
      base_url: 'https://api.wave.com',
      callback_token: 'w'.repeat(24),
      api_key: 'wave_sn_prod_literal',
      webhook_secret: 'wave_sn_WHS_literal',
    };
    const validate = compileBody(WaveEntry);
    assert.ok(validate(wave), JSON.stringify(validate.errors));
    for (const missing of ['api_key', 'webhook_secret']) {
      const without: Record<string, unknown> = { ...wave };
      delete without[missing];
      assert.equal(validate(without), false, `without ${missing}`);
    }
    assert.equal(validate({ ...wave, api_key: '' }), false, 'an empty api_key');
    assert.equal(validate({ ...wave, merchant_key: 'k' }), false, 'a field Wave has not');
    const box = new SecretBox(Buffer.alloc(32, 7));
    const literals: string[] = [];
    const read = readSecrets(
      { ...wave, webhook_secret: { env: 'WAVE_WEBHOOK_SECRET' }, signing_secret: { sealed: box.seal('signing') } },
      WaveEntry,
      { env: { WAVE_WEBHOOK_SECRET: 'from-env' }, box: () => box, literal: (field) => literals.push(field) },
      'wave',
    ) as Record<string, unknown>;
    assert.equal(read.api_key, 'wave_sn_prod_literal');
    assert.equal(read.webhook_secret, 'from-env');
    assert.equal(read.signing_secret, 'signing');
    assert.deepEqual(literals.sort(), ['api_key', 'callback_token']);
  });

  it('the Daraja initiator: a ready-made security_credential, or initiator_password with the certificate, never half of one or both', async () => {
    const b2c = { shortcode: '600000', initiator_name: 'testapi' };
    const withPassword = { ...daraja, b2c: { ...b2c, initiator_password: 'P', certificate: DARAJA_FAKE_CERTIFICATE } };
    assert.equal((await plan({ connectors: [withPassword] })).rails.get('KE/mpesa'), 'mkopo');
    assert.equal((await plan({ connectors: [daraja] })).rails.get('KE/mpesa'), 'mkopo', 'a ready-made one still works');
    const env = { DARAJA_CERT: DARAJA_FAKE_CERTIFICATE, DARAJA_PASSWORD: 'P' };
    const fromEnv = {
      ...daraja,
      b2c: { ...b2c, initiator_password: { env: 'DARAJA_PASSWORD' }, certificate: { env: 'DARAJA_CERT' } },
    };
    assert.equal((await plan({ connectors: [fromEnv] }, env)).rails.get('KE/mpesa'), 'mkopo');
    const cases: [unknown, RegExp][] = [
      [
        { ...daraja, b2c },
        /connector 'mkopo'.*field b2c.security_credential \(or b2c.initiator_password with b2c.certificate\) is required/,
      ],
      [
        { ...daraja, b2c: { ...b2c, initiator_password: 'P' } },
        /field b2c.certificate is required with b2c.initiator_password/,
      ],
      [
        { ...daraja, b2c: { ...b2c, initiator_password: 'P', certificate: 'not a pem' } },
        /field b2c.certificate is not a PEM certificate/,
      ],
      [
        { ...daraja, b2c: { ...daraja.b2c, initiator_password: 'P', certificate: DARAJA_FAKE_CERTIFICATE } },
        /not both/,
      ],
    ];
    for (const [entry, message] of cases) await assert.rejects(plan({ connectors: [entry] }), message);
  });

  it('the connector encrypts the initiator password so that the certificate key reads it back', () => {
    const made = securityCredential({
      shortcode: '600000',
      initiator_name: 'testapi',
      initiator_password: 'Pa55-word!',
      certificate: DARAJA_FAKE_CERTIFICATE,
    });
    assert.equal(initiatorPasswordOf(made), 'Pa55-word!');
    assert.notEqual(
      securityCredential({
        shortcode: '600000',
        initiator_name: 'testapi',
        initiator_password: 'Pa55-word!',
        certificate: DARAJA_FAKE_CERTIFICATE,
      }),
      made,
      'PKCS#1 v1.5 is randomised',
    );
    assert.equal(
      securityCredential({ shortcode: '600000', initiator_name: 'testapi', security_credential: 'ready' }),
      'ready',
    );
    assert.equal(
      initiatorPasswordOf(Buffer.from('Pa55-word!').toString('base64')),
      undefined,
      'a literal is not a credential',
    );
  });

  it('a base_url on loopback may be plain http (a local fake)', async () => {
    assert.equal(
      (await plan({ connectors: [{ ...momo, base_url: 'http://127.0.0.1:4010' }] })).rails.get('GH/mtn_momo'),
      'mtn',
    );
  });

  it('npm start refuses a bad file before opening the database, with the message', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ connectors: [{ ...airtel, country: 'Kenya' }] }));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PROVIDERS_FILE: file,
      DATA_DIR: path.join(dir, 'never-created'),
      LOG_LEVEL: 'silent',
    };
    delete env.DATABASE_URL;
    const res = spawnSync(process.execPath, npmStartArgs(), { env, encoding: 'utf8', timeout: 30_000 });
    assert.equal(res.status, 1, res.stderr);
    assert.match(
      res.stderr,
      /configuration error: PROVIDERS_FILE: connector 'airtel' \(connectors\[0\], airtel_money\): field country/,
    );
  });
});

// `npm run fake -- mpesa_daraja|mtn_momo|airtel_money|wave|orange_money [--port N] [--providers-file FILE] [--callback-url URL] [--act-after-ms N]`:
// starts one operator fake on loopback and prints (or writes to FILE) the PROVIDERS_FILE that points a connector at
// it. Faults are injected with POST /__fake/control (see docs/connectors/README.md).
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { AirtelFake } from './airtel-money.js';
import type { FakeOperator } from './fake-server.js';
import {
  DARAJA_FAKE_CERTIFICATE,
  DarajaFake,
  FAKE_INITIATOR_PASSWORD,
  SANDBOX_PASSKEY,
  SANDBOX_SHORTCODE,
} from './mpesa-daraja.js';
import { MomoFake } from './mtn-momo.js';
import { WaveFake } from './wave.js';
import { OrangeFake } from './orange-money.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    port: { type: 'string' },
    'providers-file': { type: 'string' },
    'callback-url': { type: 'string' },
    'act-after-ms': { type: 'string' },
  },
});
const type = positionals[0];
const port = values.port === undefined ? 0 : Number(values.port);
const actAfterMs = values['act-after-ms'] === undefined ? 2000 : Number(values['act-after-ms']);
const log = (line: string): void => void process.stdout.write(`${new Date().toISOString()} ${line}\n`);
const callbackToken = 'fake-callback-token-0123456789';

let fake: FakeOperator;
let entry: (url: string) => Record<string, unknown>;
switch (type) {
  case 'mpesa_daraja':
    fake = new DarajaFake({ port, actAfterMs, log });
    entry = (url) => ({
      type,
      name: 'daraja',
      rails: ['KE/mpesa'],
      base_url: url,
      callback_token: callbackToken,
      consumer_key: 'fake-consumer-key',
      consumer_secret: 'fake-consumer-secret',
      shortcode: SANDBOX_SHORTCODE,
      passkey: SANDBOX_PASSKEY,
      transaction_type: 'CustomerPayBillOnline',
      b2c: {
        shortcode: '600000',
        initiator_name: 'testapi',
        initiator_password: FAKE_INITIATOR_PASSWORD,
        certificate: DARAJA_FAKE_CERTIFICATE,
      },
    });
    break;
  case 'mtn_momo':
    fake = new MomoFake({ port, actAfterMs, log });
    entry = (url) => ({
      type,
      name: 'mtn',
      rails: ['GH/mtn_momo', 'UG/mtn_momo'],
      base_url: url,
      callback_token: callbackToken,
      target_environment: 'sandbox',
      collection: {
        subscription_key: 'fake-collection-key',
        api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a01',
        api_key: 'fake-collection-api-key',
      },
      disbursement: {
        subscription_key: 'fake-disbursement-key',
        api_user: '5f2c2b38-7c0c-4a6a-9d1e-2f1b4a9c0a02',
        api_key: 'fake-disbursement-api-key',
      },
    });
    break;
  case 'airtel_money':
    fake = new AirtelFake({ port, actAfterMs, log, callbackUrl: values['callback-url'], pin: 'fake-encrypted-pin' });
    entry = (url) => ({
      type,
      name: 'airtel',
      rails: ['KE/airtel_money'],
      base_url: url,
      callback_token: callbackToken,
      client_id: 'fake-client-id',
      client_secret: 'fake-client-secret',
      country: 'KE',
      currency: 'KES',
      pin: 'fake-encrypted-pin',
    });
    break;
  case 'wave':
    // The payer pays on the page each session's wave_launch_url opens (or by a control command: {"pay": "cos-…"}).
    fake = new WaveFake({ port, actAfterMs, log, webhookUrl: values['callback-url'], autoPay: false });
    entry = (url) => ({
      type,
      name: 'wave',
      rails: ['SN/wave', 'CI/wave'],
      base_url: url,
      callback_token: callbackToken,
      api_key: 'wave_sn_prod_fake-api-key',
      webhook_secret: 'wave_sn_WHS_fake-webhook-secret',
      return_url: 'https://shop.example/thanks',
    });
    break;
  case 'orange_money':
    fake = new OrangeFake({ port, actAfterMs, log });
    entry = (url) => ({
      type,
      name: 'orange',
      rails: ['CI/orange_money'],
      base_url: url,
      // The fake's notif_url must stay within Orange's 120 characters: a short callback_token.
      callback_token: 'fake-callback-token',
      client_id: 'fake-client-id',
      client_secret: 'fake-client-secret',
      merchant_key: 'fake-merchant-key',
      country: 'CI',
      currency: 'XOF',
    });
    break;
  case undefined:
  default:
    process.stderr.write(
      'usage: npm run fake -- mpesa_daraja|mtn_momo|airtel_money|wave|orange_money [--port N] [--providers-file FILE] [--callback-url URL] [--act-after-ms N]\n',
    );
    process.exit(2);
}

const url = await fake.start();
log(`${type} fake listening on ${url}; inject faults with POST ${url}/__fake/control`);
const providers = `${JSON.stringify({ connectors: [entry(url)] }, null, 2)}\n`;
if (values['providers-file'] === undefined) process.stdout.write(providers);
else {
  writeFileSync(values['providers-file'], providers);
  log(`wrote ${values['providers-file']}: start the service with PROVIDERS_FILE=${values['providers-file']}`);
}
const stop = (): void => void fake.stop().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

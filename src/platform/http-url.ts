// Absolute http(s) URLs that integrators give us (webhook endpoints, checkout return addresses): one judgement.
import type { PaymentsEnv } from './environment.js';

/** The URL, or what is wrong with it: not absolute, not http(s), plain http in production, or carrying credentials. */
export function parseHttpUrl(raw: string, env: PaymentsEnv, example: string): URL | string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `must be an absolute URL such as ${example}`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https URL';
  if (env === 'production' && url.protocol !== 'https:') return 'must use https in production';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
  return url;
}

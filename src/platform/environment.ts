// The words of the configuration that lower layers use too: which environment the service serves, the error a bad
// setting raises, and the form of a secrets key. config.ts parses the environment with them and re-exports them;
// they live here so that platform/ needs nothing from config.ts.

export type PaymentsEnv = 'sandbox' | 'production';

/** A setting (environment variable, key file, providers file) the service cannot start with; main prints its message. */
export class ConfigError extends Error {}

/** 32 bytes in base64: what `openssl rand -base64 32` prints. */
export const SECRETS_KEY_FORM = /^[A-Za-z0-9+/]{43}=$/;

// The interface version this service implements (interface spec v2.5.0): every response says it in API-Version.
export const API_VERSION = '2.5.0';

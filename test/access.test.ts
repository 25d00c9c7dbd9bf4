// Who may call what is declared on every route (config.auth): every route declares it, a token of an audience a
// route does not admit gets 403 on every route, and the reference documents the rule of each operation.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Audience } from '../src/platform/tokens.js';
import { assertProblem, liquidityProviderToken, request, startTestApp } from './helpers/harness.js';

const t = await startTestApp();
after(async () => t.close());
const tokens: Record<Audience, string> = {
  admin: t.adminToken,
  integrator: t.demoToken,
  liquidity_provider: await liquidityProviderToken(t),
};

const ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const concrete = (url: string): string =>
  url.replace(/:[A-Za-z]+/g, (p) =>
    p === ':market' ? 'KE' : p === ':rail' ? 'mpesa' : p === ':provider' ? 'sandbox' : ID,
  );

describe('access declared on the routes', () => {
  it('every route the service has, and each documented operation, declares its audiences', () => {
    for (const key of t.app.accessRules.keys()) {
      const [method, url] = key.split(' ') as [string, string];
      assert.ok(t.app.hasRoute({ method: method as 'GET', url }), `the table names ${key}, which is not a route`);
    }
    const documented = new Set<string>();
    const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods))
        documented.add(`${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`);
    }
    assert.deepEqual(
      [...documented].filter((k) => !t.app.accessRules.has(k)),
      [],
      'documented routes that declare no audiences',
    );
  });

  it('a valid token of an audience a route does not admit gets 403 forbidden, on every route', async () => {
    let checked = 0;
    for (const [key, rule] of t.app.accessRules) {
      if (rule === 'public') continue;
      const [method, url] = key.split(' ') as [string, string];
      for (const audience of ['integrator', 'liquidity_provider', 'admin'] as const) {
        if (rule.includes(audience)) continue;
        const res = await request(t, method, concrete(url), {
          token: tokens[audience],
          ...(method === 'POST' ? { body: {} } : {}),
        });
        assertProblem(res, 403, 'forbidden');
        assert.match(res.body.detail, new RegExp(rule.join('|')));
        checked += 1;
      }
    }
    assert.ok(checked >= 20, `only ${checked} route/audience pairs were checked`);
  });

  it("the reference documents each operation's rule", () => {
    const doc = t.app.swagger() as { paths: Record<string, Record<string, { description?: string }>> };
    for (const [key, rule] of t.app.accessRules) {
      const [method, url] = key.split(' ') as [string, string];
      // The dashboard's pages are public routes with their own sessions (test/dashboard.sessions.test.ts), not API.
      if (url.startsWith('/dashboard')) {
        assert.equal(rule, 'public', key);
        continue;
      }
      const op = doc.paths[url.replace(/:([A-Za-z]+)/g, '{$1}')]?.[method.toLowerCase()];
      assert.ok(op, `${key} is not documented`);
      if (rule === 'public') assert.match(op.description ?? '', /No token needed/, key);
      else for (const audience of rule) assert.match(op.description ?? '', new RegExp(`\`${audience}\``), key);
    }
  });
});

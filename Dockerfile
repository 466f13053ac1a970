# The ledger's api and worker image (docker-compose.yml runs it twice with different commands).
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations
ENV NODE_ENV=production
# api and worker both apply pending migrations at start (idempotent, serialized by a lock).
CMD ["npm", "run", "api"]

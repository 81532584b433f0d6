# One image for the worker and the HTTP server (docker-compose.yml picks the command).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
# git: Sandcastle drives worktrees and branches on the host side of the run.
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production SCQ_DATA_DIR=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The state directory belongs to the user the program runs as; a named volume mounted here copies this ownership.
RUN mkdir -p /data && chown node:node /data
USER node
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["start"]

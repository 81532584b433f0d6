# One image for the worker and the HTTP server (docker-compose.yml picks the command). One recipe, two bases (ADR 0048):
#   with an image registry:  docker build .   (node:24-bookworm-slim; the app compiled inside with npm)
#   without one:             scripts/build-service-images.sh   (BASE=localhost/sandcastle-queue-node:24, a Debian
#                            base built by debootstrap; APP_FROM=context: the app compiled on the host, copied in)
ARG BASE=node:24-bookworm-slim
# Where /app comes from: "build" compiles it here (needs npm and the npm registry inside the build); "context" takes
# package.json, node_modules (production only) and dist from the build context, already compiled.
ARG APP_FROM=build

FROM ${BASE} AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund
COPY . .
# Then the production dependencies alone, from the lockfile (`npm prune --omit=dev` refuses this tree's peer ranges).
RUN npm run build && rm -rf node_modules && npm ci --omit=dev --no-audit --no-fund

FROM ${BASE} AS context
WORKDIR /app
COPY package.json ./
COPY node_modules ./node_modules
COPY dist ./dist

# Only the stage named by APP_FROM is built (BuildKit and buildah skip the other).
FROM ${APP_FROM} AS app

FROM ${BASE}
# git: Sandcastle drives worktrees and branches on the host side of the run. A base that has it skips apt.
RUN if ! command -v git >/dev/null 2>&1 || [ ! -e /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /app
ENV NODE_ENV=production SCQ_DATA_DIR=/data
COPY --from=app /app/package.json ./
COPY --from=app /app/node_modules ./node_modules
COPY --from=app /app/dist ./dist
# The state directory belongs to the user the program runs as; a named volume mounted here copies this ownership.
RUN mkdir -p /data && chown node:node /data
USER node
# What `start` runs, workers and HTTP, answers (compose checks each service's own part: `health --worker`, `--http`).
# podman keeps this only in the docker image format (`podman build --format docker`).
HEALTHCHECK --interval=30s --timeout=10s --start-period=30s --retries=3 CMD ["node", "/app/dist/src/cli/main.js", "health"]
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["start"]

# syntax=docker/dockerfile:1
# The service image. Two stages: `build` holds the toolchain (python3, make and g++ build the pkcs11js
# native addon at install) and compiles the TypeScript; the runtime stage holds only Node, the
# production dependencies, dist/, SoftHSM2 and OpenSC, and runs as an unprivileged user. No secret
# is passed to the build: configuration comes at run time (README, Configuration). How to run it,
# and what was and was not executed here: deploy/README.md.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
# npm 11 honours package.json's allowScripts (pkcs11js builds, telemetry and binary downloads are
# refused); the npm 10 of Node 20 images would run every dependency's install script.
RUN npm install -g npm@11.19.1 --no-audit --no-fund
WORKDIR /build
# node-gyp builds pkcs11js against the headers the Node image ships instead of downloading them.
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json ./
# `npm install` from the committed lock, not `npm ci` (docs/decisions.md, "npm install, not npm ci").
RUN npm install --no-audit --no-fund
COPY .swcrc ./
COPY apps apps
COPY libs libs
COPY migrations migrations
# The management portal (DECISIONS 17): its own dependencies, built into portal/dist; the runtime
# stage takes only that build.
COPY portal/package.json portal/package-lock.json portal/
RUN npm --prefix portal install --no-audit --no-fund
COPY portal portal
RUN npm --prefix portal run build
RUN npm run build \
 && find dist \( -name '*.spec.js' -o -name '*.spec.js.map' \) -delete \
 && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
# SoftHSM2 for the demo HSM (docker-compose.yml); OpenSC's pkcs11-tool and PKCS#11 libraries to
# provision it and to inspect a mounted vendor module. No compiler here.
RUN apt-get update \
 && apt-get install -y --no-install-recommends softhsm2 opensc \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 platform \
 && useradd --system --uid 10001 --gid platform --home-dir /var/lib/platform --shell /usr/sbin/nologin platform \
 && mkdir -p /var/lib/platform/softhsm \
 && chown -R platform:platform /var/lib/platform \
 && chmod -R 0700 /var/lib/platform
WORKDIR /app
# production refuses generated secrets, the embedded database and the embedded HSM: a container
# started without its configuration stops at once and names what is missing.
ENV NODE_ENV=production \
    PORT=8080 \
    METRICS_PORT=9464 \
    DATA_DIR=/var/lib/platform
# Owned by root and read-only to the service user.
COPY --from=build /build/package.json ./
COPY --from=build /build/node_modules node_modules
COPY --from=build /build/dist dist
COPY --from=build /build/portal/dist portal/dist
COPY ops/scopeAssignment.properties ops/healthcheck.js ops/
USER 10001:10001
EXPOSE 8080 9464
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 CMD ["node", "ops/healthcheck.js"]
# The flags and entry point of ops/service-command.js (test/deploy-container.spec.ts holds them equal).
CMD ["node", "--max-semi-space-size=64", "dist/apps/api/src/main.js"]

# Switchboard on Node 24 LTS.
# Dependencies are installed in layers of their own, before any source is copied, so a source
# change reruns only the build, never the install of better-sqlite3.

# Production dependencies: better-sqlite3 compiles from source (no prebuilt binary is fetched);
# onnxruntime-node keeps only this platform's binaries (the others are ~250 MB).
FROM node:24-bookworm-slim AS deps
WORKDIR /app
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --ignore-scripts \
  && npm rebuild better-sqlite3 \
  && platform="$(node -p 'process.platform + "/" + process.arch')" \
  && find node_modules/onnxruntime-node/bin/napi-v6 -mindepth 2 -maxdepth 2 -type d \
       ! -path "*/napi-v6/$platform" -exec rm -rf {} +

# The build (a bundle, scripts/build-dist.ts), with the development dependencies (no install
# scripts: esbuild's binary comes as an optional dependency, and the build needs nothing else).
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY scripts/build-dist.ts scripts/ascii-source.ts ./scripts/
COPY src ./src
RUN npx tsx scripts/build-dist.ts --force

FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    PORT=8080 \
    HOST=0.0.0.0 \
    SWITCHBOARD_DATA_DIR=/data
WORKDIR /app
COPY --from=deps /app/package.json ./
COPY --from=deps /app/node_modules ./node_modules
# Recorded speech and scenarios, so `switchboard loadtest` and `switchboard call` work in the image.
COPY fixtures ./fixtures
COPY scenarios ./scenarios
COPY --from=build /app/dist ./dist
COPY bin ./bin
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The launcher sets malloc's environment, then runs node in its place (bin/switchboard).
ENTRYPOINT ["bin/switchboard"]
CMD ["serve"]

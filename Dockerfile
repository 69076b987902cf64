# syntax=docker/dockerfile:1
FROM node:24-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json nest-cli.json ormconfig.ts ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim
# Memory settings of `npm start` (package.json "config"): peak RSS under load stays under 200 MB. A NODE_OPTIONS
# given at run time replaces them.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=1048576 \
    NODE_OPTIONS="--max-semi-space-size=8 --max-old-space-size=160"
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --retries=5 CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The V8 flags of `npm start` (package.json "config.nodeFlags"), which NODE_OPTIONS does not take.
CMD ["node", "--no-allocation-site-pretenuring", "--no-memory-reducer", "dist/src/main.js"]

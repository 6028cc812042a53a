# The service image: one image, two roles (`api` or `worker`, the CMD). Debian-based because sharp's prebuilt
# libvips and Temporal's native core bridge need glibc; fonts for card text; ffmpeg for videos.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
# The folders of tsconfig.build.json (the service without its tests and benchmarks; test/deploy checks the list).
COPY tsconfig.json tsconfig.build.json ./
COPY app ./app
COPY ops ./ops
COPY src ./src
COPY api ./api
COPY workflows ./workflows
COPY activities ./activities
COPY migrations ./migrations
# The dashboard (web/), built by Vite into dist/web and served by the API process under /dashboard.
COPY web ./web
RUN npx tsc -p tsconfig.build.json && node dist/ops/build-web.js && npm prune --omit=dev

FROM node:24-bookworm-slim
# jemalloc instead of glibc's malloc, as sharp recommends for long-running processes on glibc: libvips' threads
# otherwise leave freed memory in per-thread arenas, and the resident size creeps up.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg fonts-dejavu-core ca-certificates libjemalloc2 \
 && ln -s "$(dpkg -L libjemalloc2 | grep '/libjemalloc.so.2$')" /usr/local/lib/libjemalloc.so.2 \
 && test -e /usr/local/lib/libjemalloc.so.2 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production DATA_DIR=/data FFMPEG_PATH=/usr/bin/ffmpeg LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The workflow bundle, made once here (webpack would otherwise run at every container start; app/workflow-bundle.ts).
RUN node -e "require('./dist/app/workflow-bundle').cachedWorkflowBundle().then((b) => { if (!('codePath' in b)) process.exit(1); })"
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
ENTRYPOINT ["node", "dist/app/main.js"]
CMD ["api"]

# Builds the single credgate executable and runs it on a slim base. Data (SQLite, CA, master key) in /data.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /data --shell /usr/sbin/nologin credgate \
 && mkdir -p /data && chown credgate /data
COPY --from=build /src/dist/credgate /usr/local/bin/credgate
USER credgate
ENV CREDGATE_DATA_DIR=/data \
    CREDGATE_HOST=0.0.0.0
VOLUME ["/data"]
EXPOSE 10254 10255
ENTRYPOINT ["credgate"]
CMD ["serve"]

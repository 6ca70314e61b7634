# Mailroom container images. Two targets from one file:
#   docker build -t mailroom .                      static, no cgo (DKIM signs with Go's crypto/rsa)
#   docker build --target cgo -t mailroom:cgo .     cgo, signs with the system's libcrypto (about 4x faster RSA)
# Both run as an unprivileged user with the data (SQLite, secret.key) in /data.
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
COPY third_party ./third_party
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=unknown
ARG BUILD_TIME=unknown
ENV LDFLAGS="-s -w -X mailroom/internal/version.Version=${VERSION} -X mailroom/internal/version.Commit=${COMMIT} -X mailroom/internal/version.BuildTime=${BUILD_TIME}"
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o /out/mailroom ./cmd/mailroom \
 && CGO_ENABLED=1 go build -trimpath -buildvcs=false -ldflags "$LDFLAGS" -o /out/mailroom-cgo ./cmd/mailroom \
 && mkdir -p /out/data

# cgo: Debian slim with libssl3 (libcrypto.so.3, loaded with dlopen at start).
FROM debian:bookworm-slim AS cgo
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libssl3 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin mailroom \
 && install -d -o mailroom -g mailroom -m 0700 /data
COPY --from=build /out/mailroom-cgo /usr/local/bin/mailroom
COPY LICENSE NOTICE /usr/share/doc/mailroom/
USER mailroom
ENV MAILROOM_DATABASE_URL=/data/mailroom.db MAILROOM_DATA_DIR=/data MAILROOM_HTTP_ADDR=:8080 MAILROOM_SMTP_ADDR=:2525
VOLUME /data
EXPOSE 8080 2525 587
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 CMD ["mailroom", "healthcheck"]
ENTRYPOINT ["mailroom"]
CMD ["serve"]

# static (the default target, last): distroless, no shell, no libc.
FROM gcr.io/distroless/static-debian12:nonroot AS static
COPY --from=build /out/mailroom /usr/local/bin/mailroom
COPY --from=build --chown=65532:65532 /out/data /data
COPY LICENSE NOTICE /usr/share/doc/mailroom/
USER 65532:65532
ENV MAILROOM_DATABASE_URL=/data/mailroom.db MAILROOM_DATA_DIR=/data MAILROOM_HTTP_ADDR=:8080 MAILROOM_SMTP_ADDR=:2525
VOLUME /data
EXPOSE 8080 2525 587
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 CMD ["mailroom", "healthcheck"]
ENTRYPOINT ["mailroom"]
CMD ["serve"]

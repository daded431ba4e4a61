# hubd's container image: the hub as a static binary on a distroless base,
# run as a non-root user, its write-ahead log on a volume.
#
# This file is not built by the repository's CI: its machines have no
# container engine. cmd/hubd's TestE2EDockerfile runs what it can without
# one: the real hubd with this CMD (its paths and addresses made local)
# and this HEALTHCHECK's probe against it, and it checks the version stamp
# is scripts/release.sh's.
#
#   docker build -t hubd --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse HEAD) .
#
# Running it (tokens, TLS, the volume): docs/OPERATIONS.md, "Container".

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# What hubd version prints; left empty, it says (devel) and unknown.
ARG VERSION=""
ARG COMMIT=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/hubd/hubd/internal/buildinfo.version=${VERSION} -X github.com/hubd/hubd/internal/buildinfo.commit=${COMMIT}" \
      -o /out/hubd ./cmd/hubd \
 && scripts/third_party_licenses.sh > /out/THIRD_PARTY_LICENSES \
 && mkdir /out/data

# CA certificates and /etc/passwd's nonroot user (65532), no shell.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hubd /usr/local/bin/hubd
COPY --from=build /out/THIRD_PARTY_LICENSES /usr/share/doc/hubd/THIRD_PARTY_LICENSES
COPY LICENSE /usr/share/doc/hubd/LICENSE
# The volume starts out owned by the user hubd runs as.
COPY --from=build --chown=65532:65532 /out/data /var/lib/hubd
USER 65532:65532
VOLUME /var/lib/hubd
EXPOSE 7420 7421
# The hub takes writes (gRPC health of hubd.v1.Hub/writes): exit 0, else 1
# (NOT_SERVING: its disk is below the reserve or its storage failed) or 3
# (not answering). --tls without verifying: the probe sends no credentials.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/hubd", "health", "--tls"]
ENTRYPOINT ["/usr/local/bin/hubd"]
# Outside loopback a hub needs tokens (or client certificates) and TLS:
# mount them under /etc/hubd (docs/OPERATIONS.md), or give other flags.
CMD ["serve", "--listen", "0.0.0.0:7420", "--http", "0.0.0.0:7421", "--data", "/var/lib/hubd", \
     "--tokens", "/etc/hubd/tokens", "--tls-cert", "/etc/hubd/tls/cert.pem", "--tls-key", "/etc/hubd/tls/key.pem", \
     "--log-format", "json"]

# syntax=docker/dockerfile:1
# The sidecar image: one static binary (manifests and guest embedded) on
# distroless, as a non-root user, with the compiled-code cache in a
# directory only that user can write. docs/OPERATING.md, "Container".
#
#   docker build -t pinned --build-arg VERSION=$(git describe --tags --always --dirty) .
#   docker run --rm -p 8080:8080 --read-only \
#     -v pinned-cache:/var/cache/pinned \
#     -v pinned-state:/var/lib/pinned \
#     -v /etc/pinned/secrets:/run/secrets:ro \
#     pinned
#
# /etc/pinned/secrets holds bot.key and caller.token, owned by uid 65532
# with mode 0400 or 0600 (the sidecar refuses a key others can read).
#
# Base images are fully qualified (registry/name:tag), as podman and
# buildah require without a short-name alias. Building needs those two
# container registries; .dockerignore keeps .git and build outputs out of
# the context.

FROM docker.io/library/golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/pinned ./cmd/pinned \
 && mkdir -p /out/cache /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pinned /usr/local/bin/pinned
# Owned by the sidecar's user, mode 0700: pinned refuses a cache directory
# (or a parent) that others can write, since it executes the code in it.
COPY --from=build --chown=65532:65532 --chmod=0700 /out/cache /var/cache/pinned
# The durable state (grant replay records, rotated pairs' grace cache): a
# restart inside a grant's TTL still refuses its replay. Same mode rule.
COPY --from=build --chown=65532:65532 --chmod=0700 /out/state /var/lib/pinned
USER 65532:65532
ENV PINNED_SIDECAR_LISTEN=0.0.0.0:8080 \
    PINNED_SIDECAR_CACHE_DIR=/var/cache/pinned \
    PINNED_SIDECAR_STATE_DIR=/var/lib/pinned \
    PINNED_SIDECAR_KEY_FILE=/run/secrets/bot.key \
    PINNED_SIDECAR_TOKEN_FILE=/run/secrets/caller.token
VOLUME /var/cache/pinned /var/lib/pinned
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/pinned", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/pinned"]
CMD ["sidecar"]

# syntax=docker/dockerfile:1
#
# canaryd's container image: one static binary on distroless, running as
# non-root (65532). Build it with BuildKit (the default builder since Docker
# 23; `docker buildx build` for other platforms):
#
#   docker build \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" \
#     -t ghcr.io/canaryd/canaryd:dev .
#
# That is the service's image (the last stage). `--target ci` builds the CI
# job image, which has a shell. .github/workflows/release.yml publishes both
# for linux/amd64 and linux/arm64 on a tag (docs/releases.md).
#
# deploy/deploy_test.go checks this file statically (stages, pinned bases, the
# Go version against go.mod, ldflags, non-root user): keep the two in step.

# The builder runs on the build machine's platform and cross-compiles for the
# target one, so multi-platform builds need no emulation. Its Go version is
# go.mod's `go` line.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build

WORKDIR /src

# Never fetch a different toolchain than the image's: a go.mod that outgrows
# the image fails here, loudly, instead of downloading Go on every build.
ENV GOTOOLCHAIN=local

# Dependencies first: this layer is rebuilt only when go.mod or go.sum change,
# and the cache mount keeps the module cache across builds.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

# Then the sources (.dockerignore keeps tests, deploy/ and build output out).
COPY . .

ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown

RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/canaryd ./cmd/canaryd

# The CI job image (`--target ci`, published as ghcr.io/canaryd/canaryd:VERSION-ci):
# the same binary on /usr/local/bin of Debian's slim image, which has a
# shell, for a pipeline job that runs `canaryd run` (GitLab's `image:`,
# GitHub's `container:`, a Tekton step's `script`). The distroless image
# below has none, so a runner cannot run a job's script in it. No ENTRYPOINT
# (runners start the image's shell) and no RUN (so building it for another
# platform needs no emulation); CA certificates come from the builder. It
# runs as root, as job images do, so that the runner's checkout is writable.
FROM debian:bookworm-slim AS ci

ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="canaryd-ci" \
      org.opencontainers.image.description="canaryd for CI jobs: the canaryd binary with a shell, for canaryd run in a pipeline" \
      org.opencontainers.image.source="https://github.com/canaryd/canaryd" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"

COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/canaryd /usr/local/bin/canaryd

# The service's image, and the default target: distroless/static: CA
# certificates, tzdata and /etc/passwd with the nonroot user, nothing else
# (no shell, no package manager).
FROM gcr.io/distroless/static-debian12:nonroot

ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="canaryd" \
      org.opencontainers.image.description="Stateless canary analysis over HTTP: Argo Rollouts AnalysisTemplates against Prometheus" \
      org.opencontainers.image.source="https://github.com/canaryd/canaryd" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"

COPY --from=build /out/canaryd /canaryd

# Numeric, so that Kubernetes' runAsNonRoot can verify it without /etc/passwd.
USER 65532:65532

EXPOSE 8080

ENTRYPOINT ["/canaryd"]
CMD ["serve"]

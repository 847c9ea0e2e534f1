# Sealtrail service image: a static sealtraild (and the sealtrail verifier) on a
# distroless base, running as the unprivileged user 65532 (docs/packaging.md).
#
#   docker build -t sealtrail .          (or: podman build / buildah bud)
#   docker run -p 8080:8080 sealtrail serve --dev --listen 0.0.0.0:8080
#
# GO_IMAGE and RUNTIME_IMAGE can point at a mirror; GOPROXY, GOFLAGS, GOMODCACHE and
# GOCACHE pass through to the build (a private proxy, -mod=vendor, mounted caches).
ARG GO_IMAGE=docker.io/library/golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
ARG GOPROXY
ARG GOFLAGS
ARG GOMODCACHE
ARG GOCACHE
WORKDIR /src
COPY go.mod go.sum ./
COPY . .
ENV CGO_ENABLED=0
RUN ["go", "build", "-trimpath", "-ldflags=-s -w", "-o", "/out/", "./cmd/sealtraild", "./cmd/sealtrail"]

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/sealtraild /out/sealtrail /usr/local/bin/
USER 65532:65532
# The data directory is created 0700 by the service itself, under the user's home
# (owned by 65532 in the distroless nonroot image); mount a volume at its parent.
ENV SEALTRAIL_DATA_DIR=/home/nonroot/data \
    SEALTRAIL_LISTEN=0.0.0.0:8080
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sealtraild"]
CMD ["serve"]

# streamlearner: a static binary in a distroless image, running as non-root.
#   docker build -t streamlearner:dev --build-arg VERSION=$(git describe --always --dirty) .
# docker-compose.yml builds it for the members and the producer.

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO off: the binary needs no libc, so it runs on distroless/static.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/streamlearner ./cmd/streamlearner

# distroless/static has no shell and no package manager; its nonroot user
# is uid 65532. There is no HEALTHCHECK: nothing in the image could run one
# (no shell, no curl). Probe /healthz and /readyz on the metrics port from
# the orchestrator instead (Kubernetes httpGet probes, or Prometheus's up).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/streamlearner /usr/local/bin/streamlearner
USER nonroot:nonroot
# /metrics, /healthz, /readyz; the server binds 127.0.0.1:9464 unless
# --metrics-addr says otherwise (set 0.0.0.0:9464 in a container).
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/streamlearner"]
CMD ["--help"]

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/streamlearner/streamlearner/pipeline"
)

// serveOps serves /metrics, /healthz (the process is up) and /readyz
// (every assigned partition has restored its model) on addr until ctx
// ends. It returns once the listener is bound, so a bad address fails at
// start.
func serveOps(ctx context.Context, addr string, reg *prometheus.Registry, m *pipeline.Metrics, log zerolog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !m.Ready() {
			msg := "not ready: none assigned, not all restored, one unable to flush or commit, or one degraded"
			if why := m.Degradations(); len(why) > 0 {
				msg = "not ready: " + strings.Join(why, "; ")
			}
			if why := m.Waiting(); why != "" {
				msg = "not ready: " + why
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("metrics address %s is in use, by another member on this machine or another program: give each member its own --metrics-addr (e.g. 127.0.0.1:9465), or --metrics-addr '' to serve none: %w", addr, err)
	}
	if err != nil {
		return fmt.Errorf("metrics address: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("metrics server")
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	log.Info().Str("addr", l.Addr().String()).Msg("serving /metrics, /healthz, /readyz")
	return nil
}

// newRegistry holds the service's series plus the Go runtime's, the
// process's and the build's.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	b := currentBuild()
	pipeline.RegisterBuildInfo(reg, b.Version, b.Revision, b.GoVersion)
	return reg
}

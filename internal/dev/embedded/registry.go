package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// RegistryConfig configures the development Schema Registry.
type RegistryConfig struct {
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// DataDir, when set, keeps the registered schemas in
	// DataDir/schemas.json across restarts (same ids, same versions);
	// empty keeps them in memory.
	DataDir string
}

// Registry is a development Schema Registry: the part of the Confluent
// REST API that producers and consumers use (register a subject version,
// get a schema by id, a subject's versions and latest version, look a
// schema up under a subject), from franz-go's srfake, served on
// 127.0.0.1 only.
type Registry struct {
	reg  *srfake.Registry
	srv  *http.Server
	addr string
	path string
	mu   sync.Mutex // serialises saves
}

// StartRegistry serves a registry until Close.
func StartRegistry(cfg RegistryConfig) (*Registry, error) {
	r := &Registry{reg: srfake.NewRegistry()}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("schema registry: %w", err)
		}
		r.path = filepath.Join(cfg.DataDir, "schemas.json")
		if err := r.load(); err != nil {
			return nil, fmt.Errorf("schema registry: %s: %w", r.path, err)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	r.addr = ln.Addr().String()
	r.srv = &http.Server{Handler: r.handler(), ReadHeaderTimeout: 10 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// URL is the registry's base URL.
func (r *Registry) URL() string { return "http://" + r.addr }

// Close stops serving.
func (r *Registry) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}

// handler saves the registry after every change that succeeded.
func (r *Registry) handler() http.Handler {
	h := r.reg.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.path == "" || req.Method == http.MethodGet {
			h.ServeHTTP(w, req)
			return
		}
		rec := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(rec, req)
		if rec.status < 300 {
			r.mu.Lock()
			defer r.mu.Unlock()
			if err := r.save(); err != nil {
				fmt.Fprintf(os.Stderr, "schema registry: saving %s: %v\n", r.path, err)
			}
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// saved is one subject version in schemas.json.
type saved struct {
	Subject string    `json:"subject"`
	Version int       `json:"version"`
	ID      int       `json:"id"`
	Schema  sr.Schema `json:"schema"`
}

// get answers a GET through the registry's own handler.
func (r *Registry) get(path string, into any) error {
	rec := httptest.NewRecorder()
	r.reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	return json.Unmarshal(rec.Body.Bytes(), into)
}

// save writes every subject version, atomically.
func (r *Registry) save() error {
	var subjects []string
	if err := r.get("/subjects", &subjects); err != nil {
		return err
	}
	var all []saved
	for _, s := range subjects {
		var versions []int
		if err := r.get("/subjects/"+s+"/versions", &versions); err != nil {
			return err
		}
		for _, v := range versions {
			ss, ok := r.reg.GetSchema(s, v)
			if !ok {
				continue
			}
			all = append(all, saved{Subject: s, Version: v, ID: ss.ID, Schema: ss.Schema})
		}
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, r.path)
}

// load seeds the registry from schemas.json, if there is one.
func (r *Registry) load() (err error) {
	b, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var all []saved
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil { // SeedSchema panics on a bad entry
			err = fmt.Errorf("%v", p)
		}
	}()
	seeded := map[int]bool{}
	for _, s := range all {
		if seeded[s.ID] {
			// The same schema under another subject: registering it
			// there again gives it the same id.
			if _, _, err := r.reg.RegisterSchema(s.Subject, s.Schema); err != nil {
				return err
			}
			continue
		}
		r.reg.SeedSchema(s.Subject, s.Version, s.ID, s.Schema)
		seeded[s.ID] = true
	}
	return nil
}

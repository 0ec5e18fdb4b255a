// Package schemareg is the service's Schema Registry client: it fetches a
// schema by the id a record carries, compiles it for package codec, and
// keeps it in a bounded cache, so that decoders (which must not block)
// find it at hand.
//
// The rules:
//   - A registry that cannot be reached, or answers with a 5xx, is nobody
//     record's fault: Ensure waits and retries with backoff until the
//     schema comes or its context ends. Nothing is dead-lettered for it.
//   - An answer that cannot be used (an empty schema, a type or text the
//     service cannot read, a 404 that is not the registry's "not found")
//     is a registry fault too, not the record's: it is retried as an
//     outage is, and never cached, so that one bad answer does not make a
//     schema id's records dead letters once the registry answers well.
//   - A schema id the registry says it does not have (a 404 with its
//     error code 404xx) is the record's fault: Schema then returns an
//     error wrapping codec.ErrUnknownSchema, and the decoder makes it a
//     dead letter (unknown_schema). That answer is remembered only for
//     NegativeTTL (5 s), so that a stream of bad ids does not hammer the
//     registry, while a schema registered late (or not yet replicated
//     to the registry member that answered) is soon found.
//   - The client is safe for concurrent use: every partition's worker
//     shares one.
package schemareg

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/streamlearner/streamlearner/codec"
)

// Config says where the registry is and how to reach it. The zero value
// of every field but URL is its default.
type Config struct {
	// URL is the registry's base URL; several may be given, separated by
	// commas (tried in turn).
	URL string
	// Username and Password, when set, are sent as HTTP basic auth.
	Username, Password string
	// TLS, when not nil, is used for https URLs (the --tls-* flags).
	TLS *tls.Config
	// CacheSize bounds the compiled schemas kept. Default 1000.
	CacheSize int
	// Timeout bounds one request. Default 10s.
	Timeout time.Duration
	// NegativeTTL is how long a 404 is remembered: the records of that
	// id are dead letters meanwhile without asking again. Default 5s.
	NegativeTTL time.Duration
	// MaxBackoff caps the wait between retries while the registry is
	// unreachable. Default 5s (from 100ms, doubling).
	MaxBackoff time.Duration
}

func (c Config) withDefaults() Config {
	if c.CacheSize <= 0 {
		c.CacheSize = 1000
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.NegativeTTL <= 0 {
		c.NegativeTTL = 5 * time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	return c
}

// Client fetches and caches schemas. See the package comment.
type Client struct {
	cfg Config
	sr  *sr.Client

	mu    sync.Mutex
	cache map[uint32]*entry
	tick  uint64
}

type entry struct {
	s       *codec.Schema
	err     error     // a negative answer (wraps codec.ErrUnknownSchema)
	expires time.Time // of a negative answer
	used    uint64
}

// New checks cfg and makes a client; it does not contact the registry.
func New(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	var urls []string
	for _, u := range strings.Split(cfg.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return nil, fmt.Errorf("schema registry %q: want an http:// or https:// URL", u)
			}
			urls = append(urls, strings.TrimRight(u, "/"))
		}
	}
	if len(urls) == 0 {
		return nil, errors.New("schema registry: no URL")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.HTTPClient(&http.Client{Transport: tr, Timeout: cfg.Timeout}), sr.UserAgent("streamlearner")}
	if cfg.Username != "" || cfg.Password != "" {
		opts = append(opts, sr.BasicAuth(cfg.Username, cfg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Client{cfg: cfg, sr: cl, cache: map[uint32]*entry{}}, nil
}

// Schema implements codec.SchemaSource: the cached schema of id, the
// cached negative answer, or an error saying it was not fetched.
func (c *Client) Schema(id uint32) (*codec.Schema, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cache[id]
	if !ok {
		return nil, fmt.Errorf("schema id %d: not fetched from the registry yet", id)
	}
	c.tick++
	e.used = c.tick
	if e.err != nil {
		return nil, e.err
	}
	return e.s, nil
}

// known says whether id has an answer in the cache (a schema, or a
// negative answer that has not expired).
func (c *Client) known(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cache[id]
	if ok && e.err != nil && time.Now().After(e.expires) {
		delete(c.cache, id)
		return false
	}
	return ok
}

func (c *Client) put(id uint32, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	e.used = c.tick
	if _, ok := c.cache[id]; !ok && len(c.cache) >= c.cfg.CacheSize {
		var oldest uint32
		least := ^uint64(0)
		for k, v := range c.cache {
			if v.used < least {
				oldest, least = k, v.used
			}
		}
		delete(c.cache, oldest)
	}
	c.cache[id] = e
}

// Fetch asks the registry for schema id once and caches the answer. It
// returns nil when the answer is known (the schema, or a negative answer
// that Schema will give), and otherwise the error of a registry that could
// not answer, or answered what cannot be used (see the package comment).
func (c *Client) Fetch(ctx context.Context, id uint32) error {
	if c.known(id) {
		return nil
	}
	s, err := c.sr.SchemaByID(ctx, int(id))
	if err != nil {
		if notFound(err) {
			c.put(id, &entry{err: fmt.Errorf("schema id %d: the registry does not have it: %w", id, codec.ErrUnknownSchema), expires: time.Now().Add(c.cfg.NegativeTTL)})
			return nil
		}
		return fmt.Errorf("schema registry: schema id %d: %w", id, err)
	}
	imports := map[string]string{}
	if err := c.references(ctx, s.References, imports, 0); err != nil {
		if notFound(err) {
			c.put(id, &entry{err: fmt.Errorf("schema id %d: a reference: %v: %w", id, err, codec.ErrUnknownSchema), expires: time.Now().Add(c.cfg.NegativeTTL)})
			return nil
		}
		return fmt.Errorf("schema registry: schema id %d: %w", id, err)
	}
	typ, err := codec.ParseSchemaType(s.Type.String())
	if err == nil {
		var cs *codec.Schema
		if cs, err = codec.CompileSchema(id, typ, s.Schema, imports); err == nil {
			c.put(id, &entry{s: cs})
			return nil
		}
	}
	// A registry whose store or proxy is in trouble answers so (an empty
	// schema, a truncated text): it says nothing sure about the id, so it
	// is waited out as an outage is, and not remembered.
	return fmt.Errorf("schema registry: schema id %d: an answer the service cannot use: %w", id, err)
}

// references fetches the text of referenced schemas (Protobuf imports),
// by import name, depth first.
func (c *Client) references(ctx context.Context, refs []sr.SchemaReference, into map[string]string, depth int) error {
	if depth > 32 {
		return errors.New("schema references nested deeper than 32")
	}
	for _, r := range refs {
		if _, ok := into[r.Name]; ok {
			continue
		}
		ss, err := c.sr.SchemaByVersion(ctx, r.Subject, r.Version)
		if err != nil {
			return fmt.Errorf("reference %s (%s v%d): %w", r.Name, r.Subject, r.Version, err)
		}
		into[r.Name] = ss.Schema.Schema
		if err := c.references(ctx, ss.References, into, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// notFound says whether err is the registry saying it has no such schema,
// subject or version: a 404 with the registry's error code 404xx (40401
// subject, 40402 version, 40403 schema not found). A bare 404 is a wrong
// URL or a proxy's page, not the registry's word on the id.
func notFound(err error) bool {
	var re *sr.ResponseError
	return errors.As(err, &re) && re.StatusCode == http.StatusNotFound && re.ErrorCode/100 == http.StatusNotFound
}

// Ensure makes sure the schema of record b (when b is framed: a record
// without the header is left to the decoder, which dead-letters it) is at
// hand, waiting while the registry cannot answer: wait is called with each
// failure and the attempt number, then Ensure sleeps (100ms doubling to
// MaxBackoff) and tries again. It returns nil, or ctx's error.
func (c *Client) Ensure(ctx context.Context, b []byte, wait func(err error, attempt int)) error {
	id, _, err := codec.Frame(b)
	if err != nil || c.known(id) {
		return nil
	}
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := c.Fetch(ctx, id)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wait != nil {
			wait(err, attempt)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
}

// Register registers a schema under subject (or finds it there) and
// returns it compiled with its id: for producers.
func (c *Client) Register(ctx context.Context, subject string, typ codec.SchemaType, text string) (*codec.Schema, error) {
	st := sr.TypeAvro
	switch typ {
	case codec.SchemaProtobuf:
		st = sr.TypeProtobuf
	case codec.SchemaJSON:
		st = sr.TypeJSON
	}
	id, err := c.sr.RegisterSchema(ctx, subject, sr.Schema{Schema: text, Type: st}, -1, -1)
	if err != nil {
		return nil, fmt.Errorf("schema registry: register under %s: %w", subject, err)
	}
	s, err := codec.CompileSchema(uint32(id), typ, text, nil)
	if err != nil {
		return nil, err
	}
	c.put(uint32(id), &entry{s: s})
	return s, nil
}

// Package schemareg is the service's Schema Registry client: it fetches a
// schema by the id a record carries, compiles it for package codec, and
// keeps it in a bounded cache, so that decoders (which must not block)
// find it at hand.
//
// The rules:
//   - A registry that cannot be reached, or answers with a 5xx, is nobody
//     record's fault: Ensure waits and retries with backoff until the
//     schema comes or its context ends. Nothing is dead-lettered for it.
//   - An answer that cannot be used (an empty schema, an Avro or JSON
//     Schema text that is not JSON: truncated, a type the service does
//     not know, a 404 that is not the registry's "not found") is a
//     registry fault too, not the record's: it is retried as an outage
//     is, and never cached, so that one bad answer does not make a
//     schema id's records dead letters once the registry answers well.
//   - A schema answered whole that does not compile (an unknown Avro
//     type, a JSON Schema pattern Go's regexp does not take, a remote
//     $ref, an unknown $schema, a validation whose work has no bound) is
//     the schema's fault: a schema id's text never changes, so asking
//     again cannot help. The compile error is remembered (as a schema
//     is, in the cache) and Schema returns it wrapping
//     codec.ErrBadSchema: the decoder makes the record a dead letter
//     (bad_schema) and the partition goes on.
//   - A schema id the registry says it does not have (a 404 with its
//     error code 404xx) is the record's fault: Schema then returns an
//     error wrapping codec.ErrUnknownSchema, and the decoder makes it a
//     dead letter (unknown_schema). That answer is remembered only for
//     NegativeTTL (5 s), so that a stream of bad ids does not hammer the
//     registry, while a schema registered late (or not yet replicated
//     to the registry member that answered) is soon found.
//   - A schema larger than MaxSchemaBytes (its text with the texts it
//     references) is not taken: reading its answer stops there, and
//     Schema returns an error wrapping codec.ErrSchemaTooLarge, which
//     the decoder makes a dead letter (schema_too_large), remembered for
//     NegativeTTL as a 404 is. The cache is bounded in bytes too
//     (CacheMaxBytes, estimated from the schemas' text; see cost).
//   - The client is safe for concurrent use: every partition's worker
//     shares one, and one fetch of an id is under way at a time.
package schemareg

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// CacheSize bounds the compiled schemas kept, in number. Default 1000.
	CacheSize int
	// CacheMaxBytes bounds the memory of the compiled schemas kept, as
	// cost estimates it; the least recently used go first. It must hold
	// two schemas of MaxSchemaBytes. Default 256 MiB.
	CacheMaxBytes int64
	// MaxSchemaBytes bounds a schema's text, with the texts of the
	// schemas it references; a larger one's records are dead letters
	// (schema_too_large). Default 1 MiB, the registry's own default.
	MaxSchemaBytes int
	// Timeout bounds one request. Default 10s.
	Timeout time.Duration
	// NegativeTTL is how long a 404, or a schema over MaxSchemaBytes, is
	// remembered: the records of that id are dead letters meanwhile
	// without asking again. Default 5s.
	NegativeTTL time.Duration
	// ValidateJSON validates each JSON Schema payload against its schema
	// (codec.SchemaOptions.ValidateJSON); off, they are only read, as by
	// Confluent's deserializer by default.
	ValidateJSON bool
	// MaxBackoff caps the wait between retries while the registry is
	// unreachable. Default 5s (from 100ms, doubling).
	MaxBackoff time.Duration
}

func (c Config) withDefaults() Config {
	if c.CacheSize <= 0 {
		c.CacheSize = 1000
	}
	if c.CacheMaxBytes <= 0 {
		c.CacheMaxBytes = 256 << 20
	}
	if c.MaxSchemaBytes <= 0 {
		c.MaxSchemaBytes = 1 << 20
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

	mu       sync.Mutex
	cache    map[uint32]*entry
	bytes    int64 // the cost of the entries
	tick     uint64
	inFlight map[uint32]*fetch
}

// fetch is a request for an id under way: done is closed when it ends,
// with err the registry's failure, if it failed.
type fetch struct {
	done chan struct{}
	err  error
}

type entry struct {
	s       *codec.Schema
	err     error     // a negative answer (wraps codec.ErrUnknownSchema, ErrSchemaTooLarge or ErrBadSchema)
	expires time.Time // of a negative answer; zero: it stands (a schema that does not compile)
	used    uint64
	cost    int64
}

// The memory a compiled schema keeps, per byte of its text, bounding what
// was measured (the heap retained after compiling generated schemas of
// 10 KB to 2 MB, of many fields, nested records, unions, enums, messages,
// empty messages): Avro 1.9-12.3 (unions of three: 12.3), Protobuf
// 22-57 (empty messages: 57; the descriptors), a JSON Schema compiled
// for validation 23-82 (properties of empty schemas: 82); one only read
// keeps nothing of its text. entryCost covers the entry itself and a
// negative answer.
const (
	avroCost  = 16
	protoCost = 64
	jsonCost  = 96
	entryCost = 512
)

// cost estimates what a schema of typ and text bytes keeps in memory.
func cost(typ codec.SchemaType, text int, validateJSON bool) int64 {
	switch {
	case typ == codec.SchemaAvro:
		return entryCost + avroCost*int64(text)
	case typ == codec.SchemaProtobuf:
		return entryCost + protoCost*int64(text)
	case typ == codec.SchemaJSON && validateJSON:
		return entryCost + jsonCost*int64(text)
	}
	return entryCost
}

// MinCacheBytes is the least CacheMaxBytes that holds two schemas of
// maxSchema bytes, whatever their type: the one a record is decoded with,
// and the one another partition fetches meanwhile.
func MinCacheBytes(maxSchema int, validateJSON bool) int64 {
	return 2 * max(cost(codec.SchemaProtobuf, maxSchema, false), cost(codec.SchemaJSON, maxSchema, validateJSON))
}

// errTooLarge is an answer cut at the limit of limitedTransport.
var errTooLarge = errors.New("the answer is larger than the service takes")

// limitedTransport stops reading a successful answer past max bytes (a
// schema's JSON, larger than its text by the escaping), so that a huge
// schema costs no more than that to refuse; an error answer is cut short
// silently, its start being all that is read of it.
type limitedTransport struct {
	http.RoundTripper
	max int64
}

func (t limitedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.RoundTripper.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.LimitReader(resp.Body, 64<<10), resp.Body}
		return resp, nil
	}
	if resp.ContentLength > t.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%d bytes: %w", resp.ContentLength, errTooLarge)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.max}
	return resp, nil
}

type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errTooLarge
	}
	return n, err
}

// answerMax is the most bytes a schema's answer may take: its text at
// most 6 times over (JSON writes a control character as \u00XX), plus the
// answer's other members.
func answerMax(maxSchema int) int64 { return 6*int64(maxSchema) + 64<<10 }

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
	if least := MinCacheBytes(cfg.MaxSchemaBytes, cfg.ValidateJSON); cfg.CacheMaxBytes < least {
		return nil, fmt.Errorf("schema cache of %d bytes: it must hold two schemas of the largest size taken, %d bytes, compiled: at least %d bytes",
			cfg.CacheMaxBytes, cfg.MaxSchemaBytes, least)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.TLS != nil {
		tr.TLSClientConfig = cfg.TLS
	}
	hc := &http.Client{Transport: limitedTransport{tr, answerMax(cfg.MaxSchemaBytes)}, Timeout: cfg.Timeout}
	opts := []sr.ClientOpt{sr.URLs(urls...), sr.HTTPClient(hc), sr.UserAgent("streamlearner")}
	if cfg.Username != "" || cfg.Password != "" {
		opts = append(opts, sr.BasicAuth(cfg.Username, cfg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry: %w", err)
	}
	return &Client{cfg: cfg, sr: cl, cache: map[uint32]*entry{}, inFlight: map[uint32]*fetch{}}, nil
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
// negative answer that has not expired). It is a use of the entry: the
// worker asks right before decoding with it, and the entry must then be
// the last the cache drops (another partition may fetch meanwhile).
func (c *Client) known(id uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cache[id]
	if ok && e.err != nil && !e.expires.IsZero() && time.Now().After(e.expires) {
		c.bytes -= e.cost
		delete(c.cache, id)
		return false
	}
	if ok {
		c.tick++
		e.used = c.tick
	}
	return ok
}

// put caches e as id's answer, first dropping the least recently used
// entries that leave no room for it, by number or by cost.
func (c *Client) put(id uint32, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	e.used = c.tick
	if e.cost == 0 {
		e.cost = entryCost
	}
	if old, ok := c.cache[id]; ok {
		c.bytes -= old.cost
		delete(c.cache, id)
	}
	for len(c.cache) > 0 && (len(c.cache) >= c.cfg.CacheSize || c.bytes+e.cost > c.cfg.CacheMaxBytes) {
		var oldest uint32
		least := ^uint64(0)
		for k, v := range c.cache {
			if v.used < least {
				oldest, least = k, v.used
			}
		}
		c.bytes -= c.cache[oldest].cost
		delete(c.cache, oldest)
	}
	c.cache[id] = e
	c.bytes += e.cost
}

// negative caches a negative answer for id, for NegativeTTL.
func (c *Client) negative(id uint32, err error) {
	c.put(id, &entry{err: err, expires: time.Now().Add(c.cfg.NegativeTTL)})
}

func (c *Client) tooLarge(id uint32, detail string) {
	c.negative(id, fmt.Errorf("schema id %d: %s, over the %d bytes taken: %w", id, detail, c.cfg.MaxSchemaBytes, codec.ErrSchemaTooLarge))
}

// begin says whether the caller is to fetch id (then it calls end when
// done); if another fetch of id is under way, it waits for it and
// returns its outcome instead: nil, or the registry's failure, which the
// caller backs off from as if it had met it itself.
func (c *Client) begin(ctx context.Context, id uint32) (bool, error) {
	c.mu.Lock()
	f, busy := c.inFlight[id]
	if !busy {
		c.inFlight[id] = &fetch{done: make(chan struct{})}
		c.mu.Unlock()
		return true, nil
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return false, f.err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

func (c *Client) end(id uint32, err error) {
	c.mu.Lock()
	f := c.inFlight[id]
	delete(c.inFlight, id)
	c.mu.Unlock()
	f.err = err
	close(f.done)
}

// Fetch asks the registry for schema id once and caches the answer. It
// returns nil when the answer is known (the schema, or a negative answer
// that Schema will give), and otherwise the error of a registry that could
// not answer, or answered what cannot be used (see the package comment).
func (c *Client) Fetch(ctx context.Context, id uint32) (err error) {
	if c.known(id) {
		return nil
	}
	if mine, err := c.begin(ctx, id); !mine {
		return err
	}
	defer func() { c.end(id, err) }()
	s, err := c.sr.SchemaByID(ctx, int(id))
	if err != nil {
		switch {
		case notFound(err):
			c.negative(id, fmt.Errorf("schema id %d: the registry does not have it: %w", id, codec.ErrUnknownSchema))
			return nil
		case errors.Is(err, errTooLarge):
			c.tooLarge(id, fmt.Sprintf("its answer has over %d bytes", answerMax(c.cfg.MaxSchemaBytes)))
			return nil
		}
		return fmt.Errorf("schema registry: schema id %d: %w", id, err)
	}
	size := len(s.Schema)
	if size > c.cfg.MaxSchemaBytes {
		c.tooLarge(id, fmt.Sprintf("%d bytes", size))
		return nil
	}
	imports := map[string]string{}
	if err := c.references(ctx, s.References, imports, 0, &size); err != nil {
		switch {
		case notFound(err):
			c.negative(id, fmt.Errorf("schema id %d: a reference: %v: %w", id, err, codec.ErrUnknownSchema))
			return nil
		case errors.Is(err, errTooLarge):
			c.tooLarge(id, fmt.Sprintf("with its references: %v", err))
			return nil
		}
		return fmt.Errorf("schema registry: schema id %d: %w", id, err)
	}
	typ, err := codec.ParseSchemaType(s.Type.String())
	if err == nil {
		var cs *codec.Schema
		if cs, err = codec.CompileSchemaWith(id, typ, s.Schema, imports, codec.SchemaOptions{ValidateJSON: c.cfg.ValidateJSON}); err == nil {
			c.put(id, &entry{s: cs, cost: cost(typ, size, c.cfg.ValidateJSON)})
			return nil
		}
		if whole(typ, s.Schema) {
			msg := fmt.Errorf("schema id %d does not compile: %v: %w", id, err, codec.ErrBadSchema)
			c.put(id, &entry{err: msg, cost: entryCost + int64(len(msg.Error()))})
			return nil
		}
	}
	// A registry whose store or proxy is in trouble answers so (an empty
	// schema, a truncated text): it says nothing sure about the id, so it
	// is waited out as an outage is, and not remembered.
	return fmt.Errorf("schema registry: schema id %d: an answer the service cannot use: %w", id, err)
}

// whole says whether a schema text that did not compile is what the
// registry holds, not an answer cut short: it is not empty, and an Avro
// or JSON Schema text (JSON, both) is JSON. A Protobuf text cannot be
// told whole; it is taken as the registry gave it.
func whole(typ codec.SchemaType, text string) bool {
	if strings.TrimSpace(text) == "" {
		return false
	}
	return typ == codec.SchemaProtobuf || json.Valid([]byte(text))
}

// references fetches the text of referenced schemas (Protobuf imports,
// JSON Schema $refs),
// by import name, depth first, adding their bytes to size.
func (c *Client) references(ctx context.Context, refs []sr.SchemaReference, into map[string]string, depth int, size *int) error {
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
		if *size += len(ss.Schema.Schema); *size > c.cfg.MaxSchemaBytes {
			return fmt.Errorf("%d bytes by reference %s: %w", *size, r.Name, errTooLarge)
		}
		into[r.Name] = ss.Schema.Schema
		if err := c.references(ctx, ss.References, into, depth+1, size); err != nil {
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
	c.put(uint32(id), &entry{s: s, cost: cost(typ, len(text), false)})
	return s, nil
}

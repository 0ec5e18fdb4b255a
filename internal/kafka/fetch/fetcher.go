package fetch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sync"
	"time"
	"unsafe"

	kafka "github.com/segmentio/kafka-go"
	fetchapi "github.com/segmentio/kafka-go/protocol/fetch"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Fetcher reads many partitions for one consumer: one Fetch request at a
// time per broker, naming every partition that broker leads whose next
// records are wanted, as Kafka's own consumer and librdkafka do — not a
// request, a connection and a buffer per partition, which made a member
// serving hundreds of partitions cost gigabytes and most of its CPU in
// requests.
//
// Rules:
//   - Each partition is read through a Partition, in offset order, by one
//     goroutine (as a Reader is); partitions are independent: an error, a
//     rewind (SetOffset) or a slow consumer of one does not touch another.
//   - A partition's next batch is fetched while its consumer works on the
//     current one (one batch ahead, no more).
//   - Memory: every record the Fetcher holds — asked for in requests in
//     flight, fetched and not yet taken, taken and not yet released —
//     counts against FetcherConfig.MaxBytes; when it is spent, requests
//     wait for consumers to release batches. A request reserves each
//     share at what the partition's last answer was held as per wire
//     byte. An answer held as more (the first of a partition, whose
//     batch may be larger than its share: brokers return the first
//     batch of a response whatever the limits; a batch better
//     compressed) is kept only within the budget; otherwise it is
//     dropped and asked for again, its cost now known, when there is
//     room. The bound is exceeded only by an answer larger than the
//     whole budget, kept when nothing else is held, so that no consumer
//     stalls on it.
//   - A batch's records (keys, values, header values) live in memory of
//     their own, valid until the Partition's next Fetch or Close; then it
//     is released to the budget.
//   - Reading semantics are the Reader's: read committed by default,
//     aborted records and markers dropped, Offset Out Of Range returned as
//     *OutOfRangeError, never retried quietly.
type Fetcher struct {
	cfg    FetcherConfig
	client *kafka.Client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// used counts the record bytes held: reserved by requests in flight,
	// and in batches not yet released.
	used    int
	sources map[int]*source // by leader broker id
	// unhomed are open partitions whose leader is not known yet, or was
	// wrong; refresh finds it.
	unhomed []*Partition
	refresh chan struct{}
}

// FetcherConfig says how to fetch. Zero values take the documented
// defaults.
type FetcherConfig struct {
	// Addr is a bootstrap broker; each partition's leader comes from the
	// cluster's metadata. Required.
	Addr net.Addr
	// Transport sends the requests; default kafka.DefaultTransport.
	Transport kafka.RoundTripper
	// ReadUncommitted reads every record written, including those of open
	// and aborted transactions. Default false: read committed.
	ReadUncommitted bool
	// MaxBytes bounds the records held by the Fetcher at once, for all
	// its partitions together (Kafka's fetch.max.bytes, but for buffers
	// too): their bytes and their Record structs, fetched ahead or taken
	// and not yet released, and what requests in flight reserve. Default
	// 16 MiB. When many partitions have records, a request gives each a
	// smaller share of it (never less than 16 KiB; the partitions beyond
	// that wait for the next request, in turn). One request asks for at
	// most a quarter of it; the answer being read, a buffer of that size,
	// comes on top.
	MaxBytes int
	// PartitionMaxBytes bounds one partition's share of a response
	// (max.partition.fetch.bytes). Default 1 MiB. A larger share costs
	// more memory for little: a consumer decodes a batch while the next is
	// fetched.
	PartitionMaxBytes int
	// MaxWait is how long a broker may hold a request that finds no
	// records (fetch.max.wait.ms). Default 500 ms. A partition whose
	// consumer was busy when the request left waits up to this long for
	// records that arrive meanwhile: the latency bought with one request
	// for many partitions.
	MaxWait time.Duration
	// RequestTimeout bounds one request beyond the broker's wait; default
	// 10 s.
	RequestTimeout time.Duration
	// ClientID names the fetcher in its requests; default "streamlearner".
	ClientID string
}

// requestPart: a request asks for at most this part of MaxBytes. Its
// answer is read whole into one buffer before its records are copied
// out, beside the records of earlier answers not yet released: a
// smaller part bounds that buffer, at the cost of more requests when
// many partitions have records.
const requestPart = 4

// expansion is what a byte of p's answers is held as; f.mu held. Until
// an answer with records comes, twice its size is assumed (records of a
// few hundred bytes with their structs, or a compressed batch).
func (p *Partition) expansion() float64 {
	if p.expand <= 0 {
		return 2
	}
	return max(p.expand, 0.25)
}

// minShare is the least a partition is given of a request's bytes: below
// it, records of ordinary size would come a few at a time.
const minShare = 16 << 10

// Partition reads one partition through a Fetcher. Its methods are for
// one goroutine.
type Partition struct {
	f     *Fetcher
	topic string
	id    int

	// Guarded by f.mu.
	src      *source
	at       int64  // the offset the next request reads from
	epoch    uint64 // bumped by SetOffset: answers to older requests are dropped
	inflight bool
	closed   bool
	// batchBytes is the mean size on the wire of the partition's record
	// batches in its last answer with records (0: none yet).
	batchBytes int
	// expand is what a byte of its answers was held as in the last one
	// with records: record bytes and structs, inflated when compressed
	// (0: none yet).
	expand float64
	// fresh: an answer without records came since the last Fetch.
	fresh bool
	ready *held // fetched, not yet taken
	inuse *held // taken, released by the next Fetch
	// end, lastStable and logStart are as of the last answer that named
	// the partition (−1: none yet).
	end, lastStable, logStart int64
	notify                    chan struct{}
}

// held is one answer for a partition: a batch with the bytes it holds, or
// an error.
type held struct {
	batch Batch
	bytes int
	err   error
	// outOfRange: the offset asked for is not in the log (err is nil);
	// Fetch finds the log's bounds.
	outOfRange bool
	offset     int64
	// batches counts the whole record batches the answer held, wire
	// their bytes.
	batches, wire int
}

// NewFetcher starts a Fetcher; Close stops it.
func NewFetcher(cfg FetcherConfig) (*Fetcher, error) {
	if cfg.Addr == nil {
		return nil, errors.New("fetch: no broker address")
	}
	if cfg.Transport == nil {
		cfg.Transport = kafka.DefaultTransport
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 16 << 20
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 1 << 20
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 10 * time.Second
	}
	if cfg.ClientID == "" {
		cfg.ClientID = defaultClientID
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fetcher{
		cfg: cfg, client: &kafka.Client{Addr: cfg.Addr, Transport: cfg.Transport, Timeout: cfg.RequestTimeout},
		ctx: ctx, cancel: cancel, sources: map[int]*source{}, refresh: make(chan struct{}, 1),
	}
	f.wg.Add(1)
	go f.home()
	return f, nil
}

// Close stops the Fetcher's requests; its Partitions' Fetch then return
// an error.
func (f *Fetcher) Close() {
	f.cancel()
	f.wg.Wait()
}

// Held is the record bytes the Fetcher holds now (see FetcherConfig.MaxBytes).
func (f *Fetcher) Held() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used
}

// Open starts reading partition id of topic at offset (kafka.FirstOffset
// and kafka.LastOffset are resolved at the first Fetch).
func (f *Fetcher) Open(topic string, id int, offset int64) *Partition {
	p := &Partition{f: f, topic: topic, id: id, at: offset, end: -1, lastStable: -1, logStart: -1, notify: make(chan struct{}, 1)}
	f.mu.Lock()
	f.unhomed = append(f.unhomed, p)
	f.mu.Unlock()
	f.rehome()
	return p
}

// rehome asks for the leaders of the unhomed partitions.
func (f *Fetcher) rehome() {
	select {
	case f.refresh <- struct{}{}:
	default:
	}
}

// home finds the leaders of unhomed partitions and gives each to its
// leader's source, retrying while the metadata cannot be had.
func (f *Fetcher) home() {
	defer f.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-f.refresh:
		}
		f.mu.Lock()
		topics := map[string]bool{}
		for _, p := range f.unhomed {
			topics[p.topic] = true
		}
		f.mu.Unlock()
		if len(topics) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.RequestTimeout)
		md, err := f.client.Metadata(ctx, &kafka.MetadataRequest{Topics: slices.Collect(maps.Keys(topics))})
		cancel()
		leaders := map[string]map[int]int{}
		if err == nil {
			for _, t := range md.Topics {
				if t.Error != nil {
					continue
				}
				m := map[int]int{}
				for _, p := range t.Partitions {
					if p.Error == nil && p.Leader.ID >= 0 && p.Leader.Host != "" {
						m[p.ID] = p.Leader.ID
					}
				}
				leaders[t.Name] = m
			}
		}
		f.mu.Lock()
		var left []*Partition
		for _, p := range f.unhomed {
			if p.closed {
				continue
			}
			id, ok := leaders[p.topic][p.id]
			if !ok {
				left = append(left, p)
				if err != nil && p.ready == nil {
					// Said to the consumer, which reports it.
					p.ready = &held{err: fmt.Errorf("fetch %s/%d: find its leader: %w", p.topic, p.id, err)}
					p.signal()
				}
				continue
			}
			s := f.sources[id]
			if s == nil {
				s = &source{f: f, wake: make(chan struct{}, 1), dec: newDecoder(!f.cfg.ReadUncommitted)}
				f.sources[id] = s
				f.wg.Add(1)
				go s.run()
			}
			p.src = s
			s.parts = append(s.parts, p)
			s.poke()
		}
		f.unhomed = left
		f.mu.Unlock()
		if len(left) > 0 {
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			f.rehome()
		} else {
			backoff = 100 * time.Millisecond
		}
	}
}

// signal tells the consumer an answer is ready; f.mu held.
func (p *Partition) signal() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// release returns h's bytes to the budget; f.mu held.
func (f *Fetcher) release(h *held) {
	if h != nil && h.bytes > 0 {
		f.used -= h.bytes
		h.bytes = 0
		for _, s := range f.sources {
			s.poke() // a source may be waiting for room
		}
	}
}

// Fetch returns the partition's next records, waiting up to maxWait for
// some (an empty Batch when none came). The previous batch's records are
// released: they must not be used any more. Errors are the Reader's:
// wrapped broker errors, Offset Out Of Range as *OutOfRangeError.
func (p *Partition) Fetch(ctx context.Context, maxWait time.Duration) (*Batch, error) {
	return p.FetchUntil(ctx, maxWait, nil)
}

// FetchUntil is Fetch that also stops waiting, with an empty Batch, once
// wake is closed (nil: never): the caller has something to do before its
// wait is over.
func (p *Partition) FetchUntil(ctx context.Context, maxWait time.Duration, wake <-chan struct{}) (*Batch, error) {
	f := p.f
	f.mu.Lock()
	f.release(p.inuse)
	p.inuse = nil
	at := p.at
	f.mu.Unlock()
	if at < 0 {
		start, end, err := p.Bounds(ctx)
		if err != nil {
			return nil, err
		}
		f.mu.Lock()
		if p.at < 0 {
			if p.at == kafka.LastOffset {
				p.at = end
			} else {
				p.at = start
			}
		}
		if p.src != nil {
			p.src.poke()
		}
		f.mu.Unlock()
	}
	var timeout <-chan time.Time
	for {
		f.mu.Lock()
		if h := p.ready; h != nil {
			p.ready, p.inuse = nil, h
			if p.src != nil {
				p.src.poke() // fetchable again
			}
			f.mu.Unlock()
			switch {
			case h.outOfRange:
				start, end, err := p.Bounds(ctx)
				if err != nil {
					return nil, fmt.Errorf("fetch %s/%d at %d: %w (and %v)", p.topic, p.id, h.offset, kafka.OffsetOutOfRange, err)
				}
				return nil, &OutOfRangeError{Topic: p.topic, Partition: p.id, Offset: h.offset, LogStart: start, LogEnd: end}
			case h.err != nil:
				return nil, h.err
			}
			return &h.batch, nil
		}
		empty := &Batch{Next: p.at, HighWatermark: p.end, LastStable: p.lastStable, LogStart: p.logStart}
		if p.fresh {
			p.fresh = false
			f.mu.Unlock()
			return empty, nil
		}
		empty.Stale = true
		f.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(max(maxWait, 0))
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-p.notify:
		case <-timeout:
			return empty, nil
		case <-wake:
			return empty, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.ctx.Done():
			return nil, fmt.Errorf("fetch %s/%d: fetcher closed", p.topic, p.id)
		}
	}
}

// Offset is the next offset Fetch returns (negative until a symbolic
// start is resolved).
func (p *Partition) Offset() int64 {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.ready != nil && p.ready.err == nil && !p.ready.outOfRange && len(p.ready.batch.Records) > 0 {
		return p.ready.batch.Records[0].Offset
	}
	return p.at
}

// SetOffset moves the partition to offset: what was fetched ahead is
// dropped, and so is the answer to a request in flight.
func (p *Partition) SetOffset(offset int64) {
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	f.release(p.ready)
	p.ready = nil
	p.at = offset
	p.epoch++
	p.fresh = false
	select { // an answer signalled before the move is no answer now
	case <-p.notify:
	default:
	}
	if p.src != nil {
		p.src.poke()
	}
}

// Close stops reading the partition and releases what it holds.
func (p *Partition) Close() {
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	f.release(p.ready)
	f.release(p.inuse)
	p.ready, p.inuse = nil, nil
	if s := p.src; s != nil {
		s.parts = slices.DeleteFunc(s.parts, func(q *Partition) bool { return q == p })
		s.poke()
	}
}

// Bounds returns the partition's log start offset and its end: the
// high-water mark, or with read committed the last stable offset.
func (p *Partition) Bounds(ctx context.Context) (start, end int64, err error) {
	return bounds(ctx, p.f.client, p.topic, p.id, p.f.cfg.ReadUncommitted, p.f.cfg.RequestTimeout)
}

// source fetches the partitions one broker leads.
type source struct {
	f     *Fetcher
	wake  chan struct{}
	parts []*Partition // f.mu
	// next is where the next request starts in parts, so that when not
	// all fit, every partition gets its turn first.
	next int
	dec  *decoder
	// buf holds an answer while it is read; scratch, copied and headers
	// a partition's records while they are copied out. All are reused.
	buf     []byte
	scratch []byte
	copied  []copied
	headers []copiedHeader
	// want holds plan's partitions to ask for, reused: made for each
	// plan, it was an eighth of the member's allocations at 1,024
	// partitions (8 KB, some 6,000 times a million records).
	want []*Partition
}

// hotWait is how long a broker may hold a request for partitions with
// nothing known to read while another partition's next batch waits on
// its consumer: that partition's next request goes after this one. The
// request is not held back instead: at 1,024 partitions there is nearly
// always such a partition, and holding the others' requests back for up
// to MaxWait made their records wait 100 ms at the median and 1 s at the
// 99th percentile (10,000 records a second in all).
const hotWait = 10 * time.Millisecond

// poke wakes the source's loop; f.mu held or not.
func (s *source) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ask is one partition's part of a request.
type ask struct {
	p      *Partition
	epoch  uint64
	offset int64
	share  int // of the answer's bytes
	cost   int // reserved until the answer comes: what the share is held as
}

func (s *source) run() {
	f := s.f
	defer f.wg.Done()
	var asks []ask
	for {
		wait, ok := s.plan(&asks)
		if !ok {
			select {
			case <-f.ctx.Done():
				return
			case <-s.wake:
			case <-time.After(wait):
			}
			continue
		}
		s.fetch(asks, wait)
		if f.ctx.Err() != nil {
			return
		}
	}
}

// plan chooses the next request's partitions and their shares, reserving
// the bytes, and the broker's wait; false (with how long to sleep at
// most) when there is nothing to ask for now.
func (s *source) plan(asks *[]ask) (time.Duration, bool) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	*asks = (*asks)[:0]
	n := len(s.parts)
	// A partition held back only by the batch its consumer has not taken
	// yet, with records behind it, will want its next batch soon: a
	// request that waits on the others would hold it back too, so the
	// broker may hold this one only briefly (hotWait).
	hot, backlog := false, false
	want := s.want[:0]
	defer func() { clear(want); s.want = want[:0] }()
	for i := range n {
		p := s.parts[(s.next+i)%n]
		switch {
		case p.closed || p.at < 0 || p.inflight:
		case p.ready != nil:
			hot = hot || (p.ready.err == nil && p.at < s.readable(p))
		default:
			want = append(want, p)
			backlog = backlog || p.at < s.readable(p)
		}
	}
	if len(want) == 0 {
		return time.Minute, false
	}
	wait := f.cfg.MaxWait
	switch {
	case hot && backlog:
		wait = 0
	case hot:
		wait = min(wait, hotWait)
	}
	avail := f.cfg.MaxBytes - f.used
	cost := max(avail/len(want), minShare)
	k, reserved, wire := 0, 0, 0
	for _, p := range want {
		// Never less than one of the partition's batches.
		e := p.expansion()
		share := min(f.cfg.PartitionMaxBytes, max(int(float64(cost)/e), p.batchBytes))
		// A batch larger than the share still comes whole: what it is
		// held as is reserved.
		c := int(float64(max(share, p.batchBytes)) * e)
		if reserved+c > avail && (k > 0 || f.used > 0) {
			break // the others wait for room, in turn
		}
		if k > 0 && wire+share > f.cfg.MaxBytes/requestPart {
			break // the others go in the next request, at once
		}
		p.inflight = true
		*asks = append(*asks, ask{p: p, epoch: p.epoch, offset: p.at, share: share, cost: c})
		k++
		reserved += c
		wire += share
	}
	if k == 0 {
		return time.Minute, false // poked when a batch is released
	}
	f.used += reserved
	// The next request starts past the partitions asked for; when all
	// were, one further on: a broker gives a batch larger than its
	// partition's share only to the first partition it answers with
	// records, so each partition must come first in its turn.
	if k < len(want) {
		s.next = (s.next + k) % n
	} else {
		s.next = (s.next + 1) % n
	}
	return wait, true
}

// readable is the end of what a request can read of p, as last seen.
func (s *source) readable(p *Partition) int64 {
	if s.f.cfg.ReadUncommitted {
		return p.end
	}
	return p.lastStable
}

// fetch sends one request and hands out its answers.
func (s *source) fetch(asks []ask, wait time.Duration) {
	f := s.f
	x, index := s.request(asks, wait)
	ctx, cancel := context.WithTimeout(f.ctx, wait+f.cfg.RequestTimeout)
	res, err := answerOf(f.cfg.Transport.RoundTrip(ctx, f.cfg.Addr, x))
	cancel()
	if err == nil && res.ErrorCode != 0 {
		err = kafka.Error(res.ErrorCode)
	}
	// The records are copied out before the lock is taken: consumers
	// take their batches meanwhile.
	var answers []*held
	if err == nil {
		answers = s.answers(asks, res, index)
	} else {
		answers = make([]*held, len(asks))
	}
	moved := false
	f.mu.Lock()
	// Each ask's reservation is given back as its answer is kept or
	// dropped; the asks not yet handled keep theirs meanwhile.
	for i, a := range asks {
		h := answers[i]
		if err != nil {
			h = &held{err: fmt.Errorf("fetch %s/%d at %d: %w", a.p.topic, a.p.id, a.offset, err)}
		}
		moved = s.settle(a, h) || moved
	}
	f.mu.Unlock()
	if moved {
		f.rehome()
	}
	if err != nil && f.ctx.Err() == nil {
		select { // a broker that answers with errors is not hammered
		case <-f.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// request is the Fetch request of asks, and each partition's place among
// them.
func (s *source) request(asks []ask, wait time.Duration) (*exchange, map[topicPartition]int) {
	f := s.f
	x := newExchange(f.cfg.ClientID, &s.buf, wait, f.cfg.ReadUncommitted)
	// The partitions' shares are what bind: a broker may leave the
	// aborted-transaction list out of a partition cut by the request-wide
	// limit (the embedded broker does), and without it aborted records
	// would pass as committed. Their sum is within the budget already.
	x.req.MaxBytes = math.MaxInt32
	index := map[topicPartition]int{}
	for i, a := range asks {
		if len(x.req.Topics) == 0 || x.req.Topics[len(x.req.Topics)-1].Topic != a.p.topic {
			x.req.Topics = append(x.req.Topics, kmsg.FetchRequestTopic{Topic: a.p.topic})
		}
		t := &x.req.Topics[len(x.req.Topics)-1]
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(a.p.id), a.offset, int32(a.share)
		t.Partitions = append(t.Partitions, rp)
		index[topicPartition{a.p.topic, a.p.id}] = i
	}
	return x, index
}

// answers copies out each ask's answer in res (nil: none came).
func (s *source) answers(asks []ask, res *kmsg.FetchResponse, index map[topicPartition]int) []*held {
	answers := make([]*held, len(asks))
	for ti := range res.Topics {
		t := &res.Topics[ti]
		for pi := range t.Partitions {
			rp := &t.Partitions[pi]
			i, ok := index[topicPartition{t.Topic, int(rp.Partition)}]
			if ok && answers[i] == nil {
				answers[i] = s.answer(asks[i], rp)
			}
		}
	}
	return answers
}

// settle gives back a's reservation and keeps its answer h (nil: none)
// for its consumer, or drops it to be asked for again; it says whether
// the partition's leader moved. Called with f.mu held.
func (s *source) settle(a ask, h *held) (moved bool) {
	f, p := s.f, a.p
	p.inflight = false
	f.used -= a.cost
	if p.closed || p.epoch != a.epoch || h == nil {
		return false // moved or closed meanwhile: the answer is for nobody
	}
	if h.err == nil && !h.outOfRange && !s.keep(a, h) {
		return false
	}
	if h.err != nil && leaderMoved(h.err) {
		s.unhome(p)
		moved = true
	}
	p.ready = h
	p.signal()
	return moved
}

// keep takes a's records in h as the partition's next batch, counting
// their bytes, and learns from them what the next asks should reserve;
// false when they are not kept: nothing came (the consumer is told the
// partition's ends), or they are held as more than was reserved past the
// budget. Called with f.mu held.
func (s *source) keep(a ask, h *held) bool {
	f, p := s.f, a.p
	p.end, p.lastStable, p.logStart = h.batch.HighWatermark, h.batch.LastStable, h.batch.LogStart
	if len(h.batch.Records) == 0 && h.batch.Next == a.offset {
		// Nothing yet: said (the consumer learns the partition's ends),
		// and the partition is asked for again.
		if a.offset < h.batch.LastStable || f.cfg.ReadUncommitted && a.offset < h.batch.HighWatermark {
			// Records there, but none came: the next batch is larger
			// than the share was.
			p.batchBytes = max(p.batchBytes, 2*a.share)
		}
		p.fresh = true
		p.signal()
		return false
	}
	if h.batches > 0 {
		p.batchBytes = max(1, h.wire/h.batches)
	}
	if h.bytes > 0 && h.wire > 0 {
		p.expand = float64(h.bytes) / float64(h.wire)
	}
	if h.bytes > a.cost && f.used > 0 && f.used+h.bytes > f.cfg.MaxBytes && h.batches > 0 {
		// Held as more than was reserved (a first batch larger than the
		// share, which brokers send whole; records that inflate more than
		// the last ones did) and past the budget: dropped, and asked for
		// again with what it costs now known, when there is room for it
		// or nothing else is held. The share asked for next covers this
		// answer whole, so that its first batch fits it.
		p.batchBytes = max(p.batchBytes, h.wire)
		return false
	}
	p.at = h.batch.Next
	f.used += h.bytes
	return true
}

type topicPartition struct {
	topic string
	id    int
}

// answer reads one partition's part of an answer.
func (s *source) answer(a ask, rp *kmsg.FetchResponseTopicPartition) *held {
	p := a.p
	if rp.ErrorCode != 0 {
		kerr := kafka.Error(rp.ErrorCode)
		if errors.Is(kerr, kafka.OffsetOutOfRange) {
			return &held{outOfRange: true, offset: a.offset}
		}
		return &held{err: fmt.Errorf("fetch %s/%d at %d: %w", p.topic, p.id, a.offset, kerr)}
	}
	h := &held{batch: Batch{Next: a.offset, HighWatermark: rp.HighWatermark, LastStable: rp.LastStableOffset, LogStart: rp.LogStartOffset}}
	if err := s.copyOut(rp, a.offset, h); err != nil {
		return &held{err: fmt.Errorf("fetch %s/%d at %d: %w", p.topic, p.id, a.offset, err)}
	}
	return h
}

// copied is a record copied into a source's scratch, by position: the
// scratch moves as it grows.
type copied struct {
	offset             int64
	time               time.Time
	key, value, end    int // key < 0: a null key
	headers, headersTo int
}

type copiedHeader struct {
	key      string
	from, to int
}

// copyOut reads a partition's records into memory of the batch's own,
// sized to them: a batch is released on its own, whatever the others do.
func (s *source) copyOut(rp *kmsg.FetchResponseTopicPartition, from int64, h *held) error {
	sc, recs, hs := s.scratch[:0], s.copied[:0], s.headers[:0]
	w, err := s.dec.partition(rp, from, func(r *rawRecord) {
		c := copied{offset: r.Offset, time: r.Time, key: -1, headers: len(hs)}
		if r.Key != nil {
			c.key = len(sc)
			sc = append(sc, r.Key...)
		}
		c.value = len(sc)
		sc = append(sc, r.Value...)
		c.end = len(sc)
		for _, hd := range r.Headers {
			at := len(sc)
			sc = append(sc, hd.Value...)
			hs = append(hs, copiedHeader{key: hd.Key, from: at, to: len(sc)})
		}
		c.headersTo = len(hs)
		recs = append(recs, c)
	})
	s.scratch, s.copied, s.headers = sc, recs, hs
	if err != nil {
		return err
	}
	h.batch.Next, h.batch.Skipped, h.batches = w.next, w.skipped, w.batches
	h.wire = w.bytes
	if len(recs) == 0 {
		return nil
	}
	buf := make([]byte, len(sc))
	copy(buf, sc)
	out := make([]Record, len(recs))
	var hdrs []kafka.Header
	if len(hs) > 0 {
		hdrs = make([]kafka.Header, len(hs))
		for i, hd := range hs {
			hdrs[i] = kafka.Header{Key: hd.key, Value: buf[hd.from:hd.to:hd.to]}
		}
	}
	for i, c := range recs {
		o := &out[i]
		o.Offset, o.Time = c.offset, c.time
		if c.key >= 0 {
			o.Key = buf[c.key:c.value:c.value]
		}
		o.Value = buf[c.value:c.end:c.end]
		if c.headersTo > c.headers {
			o.Headers = hdrs[c.headers:c.headersTo:c.headersTo]
		}
	}
	h.batch.Records = out
	// Counted as held: the records' bytes and their structs (104 bytes
	// each, as much as a small record's bytes).
	h.bytes = len(buf) + len(out)*int(unsafe.Sizeof(Record{})) + len(hdrs)*int(unsafe.Sizeof(kafka.Header{}))
	return nil
}

// unhome gives p back to be homed again (its leader moved); f.mu held.
func (s *source) unhome(p *Partition) {
	if p.src != s {
		return
	}
	s.parts = slices.DeleteFunc(s.parts, func(q *Partition) bool { return q == p })
	p.src = nil
	s.f.unhomed = append(s.f.unhomed, p)
}

// leaderMoved says whether err means a partition's leader is not where
// the request went.
func leaderMoved(err error) bool {
	for _, e := range []error{kafka.NotLeaderForPartition, kafka.LeaderNotAvailable, kafka.UnknownTopicOrPartition, kafka.FencedLeaderEpoch, kafka.UnknownLeaderEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	var fe *fetchapi.Error
	return errors.As(err, &fe) // the transport's: no leader, or another one
}

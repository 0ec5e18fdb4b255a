package embedded

import (
	"context"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reaper makes kfake's classic consumer groups keep two promises of
// Kafka's that kfake breaks, both of which left a group without a live
// member serving some partitions after members were killed.
//
// A dead member expires. kfake starts a member's session timer when a
// reply reaches the member, so one whose JoinGroup reply goes to a closed
// connection (a process killed while joining, or a client that gave up on
// a join the coordinator was holding) is made part of the next generation
// with no timer. If a live member leads that generation and syncs, the
// group is stable with the dead member in it for good: its partitions are
// never served and nothing starts another rebalance; in a later rebalance
// it holds up the others for a whole rebalance timeout. Kafka schedules
// every member's session expiry when a rebalance completes; the reaper
// sends a LeaveGroup on behalf of any member silent for a session timeout
// (since its last request, since the reaper first saw it, or, for one
// waiting in SyncGroup, since that was answered) while the group is
// stable or prepares a rebalance. A live member heartbeats well within
// the timeout; one waiting in JoinGroup is heartbeated for, below.
//
// A member waiting in JoinGroup or SyncGroup does not. kfake keeps the
// session timer of the member's last heartbeat (or join reply) running
// while it holds the member's request, so a join held for a session
// timeout (the rebalance waits for a dead member), or a sync held as long
// (the leader is dead, and kfake waits a rebalance timeout before it
// drops the leader), drops the member without an answer; the client then
// waits out its request timeout, joins again as a new member, and the
// rebalance starts over. The reaper heartbeats on behalf of members whose
// JoinGroup or SyncGroup is still held, which is what Kafka's coordinator
// does for them implicitly.
type reaper struct {
	c      *kfake.Cluster
	client *kafka.Client
	every  time.Duration

	mu     sync.Mutex
	groups map[string]*watched

	done    chan struct{}
	stopped chan struct{}
}

type watched struct {
	session time.Duration          // longest session timeout a join asked for
	members map[string]*seenMember // by member id
}

type seenMember struct {
	last    time.Time // its last request, or when the reaper first saw it
	waiting pending   // the request whose answer may be held
	gen     int32     // the generation that request was made in
}

type pending int8

const (
	none pending = iota
	joining
	syncing
)

// startReaper hooks the group requests of c, whose listener is addr, and
// checks its groups every interval (a fraction of the shortest session
// timeout) until stop.
func startReaper(c *kfake.Cluster, addr string, every time.Duration) *reaper {
	r := &reaper{
		c: c, every: every, groups: map[string]*watched{},
		client: &kafka.Client{Addr: kafka.TCP(addr), Transport: &kafka.Transport{}, Timeout: 5 * time.Second},
		done:   make(chan struct{}), stopped: make(chan struct{}),
	}
	// Only these keys: a hook on every key would run on every produce and
	// fetch.
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.OffsetCommit} {
		c.ControlKey(int16(k), r.observe)
	}
	go r.run()
	return r
}

// observe notes which member sent a group request; it never handles one.
// It runs off the cluster's loop, which serves GroupInfo meanwhile.
func (r *reaper) observe(req kmsg.Request) (kmsg.Response, error, bool) {
	now := time.Now()
	var gen int32 // a join's: the generation its rebalance moves on from
	if j, ok := req.(*kmsg.JoinGroupRequest); ok && j.MemberID != "" {
		if gi := r.c.GroupInfo(j.Group); gi != nil {
			gen = gi.Epoch
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	touch := func(group, member string) *seenMember {
		w := r.groups[group]
		if w == nil || member == "" {
			return nil
		}
		m := w.members[member]
		if m == nil {
			m = &seenMember{}
			w.members[member] = m
		}
		m.last = now
		return m
	}
	switch req := req.(type) {
	case *kmsg.JoinGroupRequest:
		w := r.groups[req.Group]
		if w == nil {
			w = &watched{members: map[string]*seenMember{}}
			r.groups[req.Group] = w
		}
		w.session = max(w.session, time.Duration(req.SessionTimeoutMillis)*time.Millisecond)
		if m := touch(req.Group, req.MemberID); m != nil {
			m.waiting, m.gen = joining, gen
		}
	case *kmsg.SyncGroupRequest:
		if m := touch(req.Group, req.MemberID); m != nil {
			m.waiting, m.gen = syncing, req.Generation
		}
	case *kmsg.HeartbeatRequest:
		// The reaper's own, for a waiting member, among them: so they
		// leave waiting as it is.
		touch(req.Group, req.MemberID)
	case *kmsg.OffsetCommitRequest:
		if m := touch(req.Group, req.MemberID); m != nil && m.waiting == syncing {
			m.waiting = none
		}
	}
	return nil, nil, false
}

func (r *reaper) run() {
	defer close(r.stopped)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		for _, a := range r.check(time.Now()) {
			// A failed request is sent again at the next check, if it is
			// still due then.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if len(a.stale) > 0 {
				req := &kafka.LeaveGroupRequest{GroupID: a.group}
				for _, m := range a.stale {
					req.Members = append(req.Members, kafka.LeaveGroupRequestMember{ID: m})
				}
				r.client.LeaveGroup(ctx, req)
			}
			for _, m := range a.waiting {
				r.client.Heartbeat(ctx, &kafka.HeartbeatRequest{GroupID: a.group, GenerationID: a.gen, MemberID: m})
			}
			cancel()
		}
	}
}

// actions are what one check found to do in a group.
type actions struct {
	group   string
	gen     int32
	stale   []string // members silent for a session timeout
	waiting []string // members whose JoinGroup or SyncGroup is held
}

func (r *reaper) check(now time.Time) []actions {
	r.mu.Lock()
	names := make([]string, 0, len(r.groups))
	for g := range r.groups {
		names = append(names, g)
	}
	r.mu.Unlock()
	// GroupInfo waits for the cluster's loop, so not under r.mu: the
	// loop may be running observe, which takes it.
	infos := make(map[string]*kfake.GroupInfo, len(names))
	for _, g := range names {
		infos[g] = r.c.GroupInfo(g)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	var out []actions
	for g, info := range infos {
		w := r.groups[g]
		if info == nil {
			delete(r.groups, g)
			continue
		}
		in := make(map[string]bool, len(info.Members))
		for _, im := range info.Members {
			in[im.MemberID] = true
			if w.members[im.MemberID] == nil {
				w.members[im.MemberID] = &seenMember{last: now}
			}
		}
		a := actions{group: g, gen: info.Epoch}
		for id, m := range w.members {
			if !in[id] {
				delete(w.members, id)
				continue
			}
			// A join is answered when its rebalance completes, which
			// moves the generation on; a sync when its generation is
			// stable or a new rebalance starts. The member waited for
			// that, so its silence counts from then.
			if m.waiting == joining && info.Epoch > m.gen ||
				m.waiting == syncing && (info.Epoch > m.gen || info.State == "Stable" || info.State == "PreparingRebalance") {
				m.waiting, m.last = none, now
			}
			switch {
			case info.State == "PreparingRebalance" && m.waiting == joining,
				info.State == "CompletingRebalance" && m.waiting == syncing:
				a.waiting = append(a.waiting, id)
			case info.State != "Stable" && info.State != "PreparingRebalance":
			case w.session > 0 && now.Sub(m.last) > w.session:
				a.stale = append(a.stale, id)
			}
		}
		if len(a.stale)+len(a.waiting) > 0 {
			out = append(out, a)
		}
	}
	return out
}

func (r *reaper) stop() {
	close(r.done)
	<-r.stopped
	r.client.Transport.(*kafka.Transport).CloseIdleConnections()
}

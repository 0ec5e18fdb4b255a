package embedded

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// crashCopy copies a running broker's data directory: the files as the
// page cache holds them, which is what a kill -9 leaves on disk.
func crashCopy(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.Walk(from, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if info.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy data directory: %v", err)
	}
	return to
}

func txnClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("x"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// committed reads partition 0 of t read_committed up to its end.
func committed(t *testing.T, addr string) []string { return readAll(t, addr, kgo.ReadCommitted()) }

func readAll(t *testing.T, addr string, iso kgo.IsolationLevel) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(iso),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var got []string
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// A transaction open when the broker is killed is aborted at the restart;
// it must stay aborted after the producer commits a later transaction and
// the broker is killed again.
func TestTransactionOpenAtAKillStaysAborted(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Start(Config{DataDir: dir, Partitions: 1, Topics: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	cl := txnClient(t, b.Addr())
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("open at the kill")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	killed := crashCopy(t, dir)
	cl.Close()
	b.Close()

	b, err = Start(Config{DataDir: killed})
	if err != nil {
		t.Fatal(err)
	}
	cl = txnClient(t, b.Addr())
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if got := committed(t, b.Addr()); len(got) != 1 || got[0] != "committed" {
		t.Logf("uncommitted %q", readAll(t, b.Addr(), kgo.ReadUncommitted()))
		t.Fatalf("after the first kill, read_committed saw %q, want [committed]", got)
	}
	killed = crashCopy(t, killed)
	b.Close()

	b, err = Start(Config{DataDir: killed})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := committed(t, b.Addr()); len(got) != 1 || got[0] != "committed" {
		t.Fatalf("after the second kill, read_committed saw %q, want [committed]", got)
	}
}

// js_consume: JetStream consumer and key-value rates with Go's nats.go client, a second
// opinion beside examples/bench --pull / --push / --kv (whose raw-protocol client is a
// different one). The same runs:
//
//   - -mode pull: the stream (deleted and created again) is filled with -n messages of -ms
//     bytes (js.PublishAsync, at most 1000 unacknowledged), a durable pull consumer is added
//     (explicit acks, -maxackpending), and -ns subscribers, each on its own connection, bind
//     to it with js.PullSubscribe and loop on sub.Fetch(-fetch) and msg.Ack() until all -n
//     are in;
//   - -mode push: the same, with a durable push consumer (a deliver subject and a deliver
//     group) and -ns js.QueueSubscribe subscribers (nats.Bind, nats.ManualAck), msg.Ack();
//   - -mode kvput / kvget: a bucket (js.CreateKeyValue), then -np clients doing -n kv.Put
//     (or, after every key is put once, kv.Get) over -keys keys, one at a time each.
//
// Every -acksample-th ack is msg.AckSync() (a double ack: it waits for the server's
// answer), timed; every KV call is timed. Prints nats.go's bench report and the latency
// percentiles and, with -json FILE, {"msgs_per_sec", "msgs", "size", "seconds",
// "latency_us": {"p50", "p90", "p99", "p999", "max", "count"}}.
//
// Debian's Go and nats.go (golang-github-nats-io-go-nats-dev), no module download:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= go build -o target/js_consume examples/js_consume.go
//	target/js_consume -s nats://127.0.0.1:4222 -mode pull -n 200000 -ms 16 -ns 1 bench
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/bench"
)

type latencies struct {
	mu sync.Mutex
	us []float64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.us = append(l.us, float64(d.Nanoseconds())/1000)
	l.mu.Unlock()
}

func (l *latencies) summary() map[string]interface{} {
	if len(l.us) == 0 {
		return nil
	}
	sort.Float64s(l.us)
	q := func(p float64) float64 { return l.us[int(p*float64(len(l.us)-1))] }
	return map[string]interface{}{
		"p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999),
		"max": l.us[len(l.us)-1], "count": len(l.us),
	}
}

func (l *latencies) line() string {
	s := l.summary()
	if s == nil {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.0f us | p90 %.0f us | p99 %.0f us | p99.9 %.0f us | max %.0f us",
		s["p50"], s["p90"], s["p99"], s["p999"], s["max"])
}

func main() {
	url := flag.String("s", nats.DefaultURL, "server URL")
	mode := flag.String("mode", "pull", "pull, push, kvput or kvget")
	n := flag.Int("n", 100000, "messages (requests for kv*)")
	ms := flag.Int("ms", 128, "message size")
	ns := flag.Int("ns", 1, "subscribers (pull, push)")
	np := flag.Int("np", 1, "clients (kvput, kvget)")
	fetch := flag.Int("fetch", 100, "pull: messages per Fetch")
	ackSample := flag.Int("acksample", 100, "every N-th ack is AckSync, timed")
	maxAckPending := flag.Int("maxackpending", 10000, "the consumer's max_ack_pending")
	stream := flag.String("stream", "benchstream", "stream to (re)create")
	storage := flag.String("storage", "file", "file or memory")
	bucket := flag.String("bucket", "benchkv", "kv*: the bucket")
	keys := flag.Int("keys", 1000, "kv*: keys the requests go round")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after this long")
	jsonOut := flag.String("json", "", "write a JSON summary here")
	flag.Parse()
	log.SetFlags(0)
	subject := "bench"
	if flag.NArg() > 0 {
		subject = flag.Arg(0)
	}
	time.AfterFunc(*timeout, func() { log.Fatalf("js_consume: not done after %v", *timeout) })
	st := nats.FileStorage
	if *storage == "memory" {
		st = nats.MemoryStorage
	}
	connect := func() (*nats.Conn, nats.JetStreamContext) {
		nc, err := nats.Connect(*url)
		if err != nil {
			log.Fatalf("connect: %v", err)
		}
		js, err := nc.JetStream(nats.PublishAsyncMaxPending(1000))
		if err != nil {
			log.Fatalf("jetstream: %v", err)
		}
		return nc, js
	}
	lat := &latencies{}
	var bm *bench.Benchmark
	switch *mode {
	case "pull", "push":
		bm = consume(connect, *mode, subject, *stream, st, *n, *ms, *ns, *fetch, *ackSample, *maxAckPending, lat)
		fmt.Print(bm.Report())
		fmt.Printf("Ack latency (%d AckSync, every %dth ack): %s\n", len(lat.us), *ackSample, lat.line())
	case "kvput", "kvget":
		bm = kvRun(connect, *mode == "kvget", *bucket, st, *n, *ms, *np, *keys, lat)
		fmt.Print(strings.Replace(bm.Report(), "Pub stats", "KV "+(*mode)[2:]+" stats", 1))
		fmt.Printf("KV %s latency (%d requests): %s\n", (*mode)[2:], len(lat.us), lat.line())
	default:
		log.Fatalf("-mode %s: pull, push, kvput or kvget", *mode)
	}
	if *jsonOut != "" {
		var secs float64
		if *mode == "pull" || *mode == "push" {
			secs = bm.Subs.Duration().Seconds()
		} else {
			secs = bm.Pubs.Duration().Seconds()
		}
		out, _ := json.Marshal(map[string]interface{}{
			"msgs_per_sec": float64(*n) / secs,
			"msgs":         *n,
			"size":         *ms,
			"seconds":      secs,
			"latency_us":   lat.summary(),
		})
		if err := os.WriteFile(*jsonOut, append(out, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func consume(connect func() (*nats.Conn, nats.JetStreamContext), mode, subject, stream string,
	st nats.StorageType, n, ms, ns, fetch, ackSample, maxAckPending int, lat *latencies) *bench.Benchmark {
	nc, js := connect()
	if err := js.DeleteStream(stream); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
		log.Fatalf("delete stream: %v", err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: stream, Subjects: []string{subject}, Storage: st}); err != nil {
		log.Fatalf("create stream: %v", err)
	}
	msg := make([]byte, ms)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		for {
			_, err := js.PublishAsync(subject, msg)
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "stalled") {
				log.Fatalf("publish: %v", err)
			}
		}
	}
	<-js.PublishAsyncComplete()
	log.Printf("Filled the stream: %.0f msgs/sec", float64(n)/time.Since(t0).Seconds())

	durable := "benchconsumer"
	cfg := &nats.ConsumerConfig{Durable: durable, AckPolicy: nats.AckExplicitPolicy,
		MaxAckPending: maxAckPending, DeliverPolicy: nats.DeliverAllPolicy}
	group := "benchq"
	if mode == "push" {
		cfg.DeliverSubject = nats.NewInbox()
		cfg.DeliverGroup = group
	}
	log.Printf("Starting JetStream %s consumer benchmark (nats.go) [msgs=%d, msgsize=%d, subs=%d, fetch=%d, acksample=%d, maxackpending=%d]",
		mode, n, ms, ns, fetch, ackSample, maxAckPending)

	bm := bench.NewBenchmark("NATS", ns, 0)
	var total atomic.Int64
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	type sub struct {
		nc          *nats.Conn
		js          nats.JetStreamContext
		got, acks   int
		first, last time.Time
	}
	subs := make([]*sub, ns)
	for i := range subs {
		c, j := connect()
		subs[i] = &sub{nc: c, js: j}
	}
	// One message: count it, ack it (every ackSample-th with AckSync, timed).
	handle := func(s *sub, m *nats.Msg) {
		now := time.Now()
		if s.got == 0 {
			s.first = now
		}
		s.got++
		s.last = now
		if s.acks%ackSample == 0 {
			t := time.Now()
			if err := m.AckSync(); err != nil {
				log.Fatalf("AckSync: %v", err)
			}
			lat.add(time.Since(t))
		} else if err := m.Ack(); err != nil {
			log.Fatalf("Ack: %v", err)
		}
		s.acks++
		if total.Add(1) >= int64(n) {
			once.Do(func() { close(done) })
		}
	}
	if mode == "pull" {
		if _, err := js.AddConsumer(stream, cfg); err != nil {
			log.Fatalf("add consumer: %v", err)
		}
		for _, s := range subs {
			ps, err := s.js.PullSubscribe(subject, durable, nats.Bind(stream, durable))
			if err != nil {
				log.Fatalf("pull subscribe: %v", err)
			}
			wg.Add(1)
			go func(s *sub, ps *nats.Subscription) {
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					msgs, err := ps.Fetch(fetch, nats.MaxWait(500*time.Millisecond))
					if err != nil && !errors.Is(err, nats.ErrTimeout) {
						log.Fatalf("fetch: %v", err)
					}
					for _, m := range msgs {
						handle(s, m)
					}
				}
			}(s, ps)
		}
	}
	if mode == "push" {
		// nats.Bind needs the consumer to exist: create it, then subscribe.
		if _, err := js.AddConsumer(stream, cfg); err != nil {
			log.Fatalf("add consumer: %v", err)
		}
		for _, s := range subs {
			s := s
			if _, err := s.js.QueueSubscribe(subject, group, func(m *nats.Msg) { handle(s, m) },
				nats.Bind(stream, durable), nats.ManualAck()); err != nil {
				log.Fatalf("queue subscribe: %v", err)
			}
		}
	}
	<-done
	wg.Wait()
	for _, s := range subs {
		if err := s.nc.Flush(); err != nil {
			log.Fatalf("flush: %v", err)
		}
		if s.got > 0 {
			bm.AddSubSample(bench.NewSample(s.got, ms, s.first, s.last, s.nc))
		}
		s.nc.Close()
	}
	bm.Close()
	nc.Close()
	return bm
}

func kvRun(connect func() (*nats.Conn, nats.JetStreamContext), get bool, bucket string,
	st nats.StorageType, n, ms, np, keys int, lat *latencies) *bench.Benchmark {
	nc, js := connect()
	if err := js.DeleteKeyValue(bucket); err != nil && !errors.Is(err, nats.ErrStreamNotFound) &&
		!errors.Is(err, nats.ErrBucketNotFound) {
		log.Fatalf("delete bucket: %v", err)
	}
	kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: bucket, Storage: st})
	if err != nil {
		log.Fatalf("create bucket: %v", err)
	}
	val := make([]byte, ms)
	if get {
		for k := 0; k < keys; k++ {
			if _, err := kv.Put(fmt.Sprintf("k%d", k), val); err != nil {
				log.Fatalf("put: %v", err)
			}
		}
	}
	op := "put"
	if get {
		op = "get"
	}
	log.Printf("Starting key-value %s benchmark (nats.go) [requests=%d, msgsize=%d, clients=%d, keys=%d]", op, n, ms, np, keys)
	bm := bench.NewBenchmark("NATS", 0, np)
	counts := bench.MsgsPerClient(n, np)
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	first := 0
	for i := 0; i < np; i++ {
		c, j := connect()
		defer c.Close()
		kv, err := j.KeyValue(bucket)
		if err != nil {
			log.Fatalf("bind bucket: %v", err)
		}
		wg.Add(1)
		ready.Add(1)
		go func(from, count int) {
			defer wg.Done()
			ready.Done()
			<-start
			t0 := time.Now()
			for i := from; i < from+count; i++ {
				key := fmt.Sprintf("k%d", i%keys)
				t := time.Now()
				if get {
					e, err := kv.Get(key)
					if err != nil {
						log.Fatalf("get %s: %v", key, err)
					}
					if len(e.Value()) != ms {
						log.Fatalf("get %s: %d bytes", key, len(e.Value()))
					}
				} else if _, err := kv.Put(key, val); err != nil {
					log.Fatalf("put %s: %v", key, err)
				}
				lat.add(time.Since(t))
			}
			bm.AddPubSample(bench.NewSample(count, ms, t0, time.Now(), c))
		}(first, counts[i])
		first += counts[i]
	}
	ready.Wait()
	close(start)
	wg.Wait()
	bm.Close()
	nc.Close()
	return bm
}

// nats_bench: Go's nats.go client as a load generator, beside examples/bench (beaver's own
// raw-protocol client): what NATS users see with nats.go, and where nats.go itself is the
// limit. The flags and the report are nats-bench's (publishers and subscribers on their own
// connections, an aggregate msgs/sec from nats.go's bench package), plus a request/reply
// latency mode.
//
//	pub/sub:  -np publishers share -n messages of -ms bytes; -ns subscribers each receive
//	          all of them. Reports nats.go's bench summary.
//	-reqrep:  one responder, -np requesters (each on its own connection) making -n
//	          requests in total, one at a time each; reports requests/s and the
//	          latency percentiles of the round trips.
//
// With -json FILE it writes {"msgs_per_sec", "msgs", "size", "seconds", and with -reqrep
// "latency_us": {"p50", "p90", "p99", "max"}}, the shape examples/compare reads from
// examples/bench.
//
// Debian's Go and nats.go (golang-github-nats-io-go-nats-dev), no module download:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= go build -o target/nats_bench examples/nats_bench.go
//	target/nats_bench -s nats://127.0.0.1:4222 -np 1 -ns 1 -n 1000000 -ms 16 foo
//	target/nats_bench -s nats://127.0.0.1:4222 -reqrep -n 20000 -ms 16 foo
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/bench"
)

type summary struct {
	MsgsPerSec float64            `json:"msgs_per_sec"`
	Msgs       int                `json:"msgs"`
	Size       int                `json:"size"`
	Seconds    float64            `json:"seconds"`
	LatencyUs  map[string]float64 `json:"latency_us,omitempty"`
}

func main() {
	url := flag.String("s", nats.DefaultURL, "server URL")
	np := flag.Int("np", 1, "publishers (requesters with -reqrep)")
	ns := flag.Int("ns", 0, "subscribers")
	n := flag.Int("n", 100000, "messages to publish (requests with -reqrep)")
	ms := flag.Int("ms", 128, "message size")
	reqrep := flag.Bool("reqrep", false, "request/reply latency mode")
	warmup := flag.Int("warmup", 1000, "-reqrep: requests before measuring")
	timeout := flag.Duration("timeout", 120*time.Second, "give up after this long")
	jsonOut := flag.String("json", "", "write a JSON summary here")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: nats_bench [flags] <subject>")
	}
	subject := flag.Arg(0)
	log.SetFlags(0)
	// Every run ends by itself.
	time.AfterFunc(*timeout, func() { log.Fatalf("nats_bench: not done after %v", *timeout) })

	var out summary
	if *reqrep {
		out = requestReply(*url, subject, *np, *n, *ms, *warmup)
	} else {
		out = pubSub(*url, subject, *np, *ns, *n, *ms)
	}
	if *jsonOut != "" {
		data, err := json.Marshal(out)
		if err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*jsonOut, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func connect(url, name string) *nats.Conn {
	nc, err := nats.Connect(url, nats.Name(name), nats.ReconnectBufSize(-1), nats.MaxReconnects(0))
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	return nc
}

// pubSub is nats-bench's run: subscribers ready first (each confirmed by a round trip),
// then publishers flood, and each side's sample runs from its first to its last message.
func pubSub(url, subject string, np, ns, n, size int) summary {
	bm := bench.NewBenchmark("NATS", ns, np)
	var ready, done sync.WaitGroup
	ready.Add(ns)
	done.Add(ns)
	for i := 0; i < ns; i++ {
		go func(i int) {
			nc := connect(url, fmt.Sprintf("sub-%d", i))
			received := 0
			var start time.Time
			finished := make(chan struct{})
			sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
				if received == 0 {
					start = time.Now()
				}
				received++
				if received == n {
					bm.AddSubSample(bench.NewSample(n, size, start, time.Now(), nc))
					close(finished)
				}
			})
			if err != nil {
				log.Fatalf("subscribe: %v", err)
			}
			// Slow subscribers keep up to the server's limits, as nats-bench sets them.
			if err := sub.SetPendingLimits(-1, -1); err != nil {
				log.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				log.Fatal(err)
			}
			ready.Done()
			if n > 0 {
				<-finished
			}
			nc.Close()
			done.Done()
		}(i)
	}
	ready.Wait()
	payload := make([]byte, size)
	var pubs sync.WaitGroup
	pubs.Add(np)
	for i := 0; i < np; i++ {
		count := n / np
		if i < n%np {
			count++
		}
		go func(i, count int) {
			nc := connect(url, fmt.Sprintf("pub-%d", i))
			start := time.Now()
			for j := 0; j < count; j++ {
				if err := nc.Publish(subject, payload); err != nil {
					log.Fatalf("publish: %v", err)
				}
			}
			if err := nc.Flush(); err != nil {
				log.Fatal(err)
			}
			bm.AddPubSample(bench.NewSample(count, size, start, time.Now(), nc))
			nc.Close()
			pubs.Done()
		}(i, count)
	}
	pubs.Wait()
	done.Wait()
	bm.Close()
	fmt.Print(bm.Report())
	// Aggregate, as nats-bench reports it: messages published plus messages delivered.
	msgs := n * ns
	if np > 0 {
		msgs += n
	}
	seconds := bm.Duration().Seconds()
	return summary{MsgsPerSec: float64(msgs) / seconds, Msgs: msgs, Size: size, Seconds: seconds}
}

// requestReply: one responder answers every request with its payload; each requester makes
// its share of the requests one at a time (nc.Request), timing each round trip.
func requestReply(url, subject string, np, n, size, warmup int) summary {
	responder := connect(url, "responder")
	defer responder.Close()
	if _, err := responder.Subscribe(subject, func(m *nats.Msg) {
		if err := m.Respond(m.Data); err != nil {
			log.Fatalf("respond: %v", err)
		}
	}); err != nil {
		log.Fatal(err)
	}
	if err := responder.Flush(); err != nil {
		log.Fatal(err)
	}
	payload := make([]byte, size)
	latencies := make([][]time.Duration, np)
	var wg sync.WaitGroup
	wg.Add(np)
	var start time.Time
	var startOnce sync.Once
	var warm sync.WaitGroup
	warm.Add(np)
	for i := 0; i < np; i++ {
		count := n / np
		if i < n%np {
			count++
		}
		go func(i, count int) {
			defer wg.Done()
			nc := connect(url, fmt.Sprintf("requester-%d", i))
			defer nc.Close()
			for j := 0; j < warmup/np; j++ {
				if _, err := nc.Request(subject, payload, 10*time.Second); err != nil {
					log.Fatalf("request: %v", err)
				}
			}
			warm.Done()
			warm.Wait()
			startOnce.Do(func() { start = time.Now() })
			mine := make([]time.Duration, 0, count)
			for j := 0; j < count; j++ {
				t := time.Now()
				if _, err := nc.Request(subject, payload, 10*time.Second); err != nil {
					log.Fatalf("request: %v", err)
				}
				mine = append(mine, time.Since(t))
			}
			latencies[i] = mine
		}(i, count)
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		i := int(p * float64(len(all)-1))
		return float64(all[i].Nanoseconds()) / 1000
	}
	lat := map[string]float64{"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99), "max": pct(1.0)}
	rate := float64(len(all)) / seconds
	fmt.Printf("Request/reply: %d requests in %.3fs, %.0f requests/s; latency p50 %.0f µs, p90 %.0f µs, p99 %.0f µs, max %.0f µs\n",
		len(all), seconds, rate, lat["p50"], lat["p90"], lat["p99"], lat["max"])
	return summary{MsgsPerSec: rate, Msgs: len(all), Size: size, Seconds: seconds, LatencyUs: lat}
}

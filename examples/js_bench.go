// js_bench: JetStream publish rate with Go's nats.go client, a second opinion beside
// examples/bench --js (whose raw-protocol client is a different one). Same stream set-up
// (delete, then create with the subject and the storage), same pacing: asynchronous
// js.PublishAsync with nats.PublishAsyncMaxPending(N) (a sliding window of N unacknowledged
// publishes), or -sync with js.Publish (one publish, its PubAck, the next). Prints nats.go's
// bench report ("Pub stats: ... msgs/sec ~ ... MB/sec") and, with -json FILE,
// {"msgs_per_sec": ..., "msgs": ..., "size": ..., "seconds": ...}.
//
// Debian's Go and nats.go (golang-github-nats-io-go-nats-dev), no module download:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= go build -o target/js_bench examples/js_bench.go
//	target/js_bench -s nats://127.0.0.1:4222 -n 200000 -ms 16 -storage file bench
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/bench"
)

func main() {
	url := flag.String("s", nats.DefaultURL, "server URL")
	n := flag.Int("n", 100000, "messages to publish, split across publishers")
	ms := flag.Int("ms", 128, "message size")
	np := flag.Int("np", 1, "publishers, each on its own connection")
	syncPub := flag.Bool("sync", false, "js.Publish: wait for each PubAck")
	maxPending := flag.Int("maxacks", 1000, "asynchronous: nats.PublishAsyncMaxPending")
	stream := flag.String("stream", "benchstream", "stream to (re)create")
	storage := flag.String("storage", "file", "file or memory")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after this long")
	jsonOut := flag.String("json", "", "write a JSON summary here")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: js_bench [flags] <subject>")
	}
	subject := flag.Arg(0)
	log.SetFlags(0)

	// Every run ends by itself: nothing may wait longer than -timeout.
	time.AfterFunc(*timeout, func() {
		log.Fatalf("js_bench: not done after %v", *timeout)
	})

	nc, err := nats.Connect(*url)
	if err != nil {
		log.Fatalf("connect: %v", err)
	}
	js, err := nc.JetStream()
	if err != nil {
		log.Fatalf("jetstream: %v", err)
	}
	if err := js.DeleteStream(*stream); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
		log.Fatalf("delete stream: %v", err)
	}
	st := nats.FileStorage
	if *storage == "memory" {
		st = nats.MemoryStorage
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: *stream, Subjects: []string{subject}, Storage: st}); err != nil {
		log.Fatalf("create stream: %v", err)
	}
	nc.Close()

	log.Printf("Starting JetStream benchmark (nats.go) [msgs=%d, msgsize=%d, pubs=%d, stream=%s, storage=%s, sync=%v, maxacks=%d]",
		*n, *ms, *np, *stream, *storage, *syncPub, *maxPending)
	bm := bench.NewBenchmark("NATS", 0, *np)
	counts := bench.MsgsPerClient(*n, *np)
	var failed atomic.Int64
	var wg, ready sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < *np; i++ {
		nc, err := nats.Connect(*url)
		if err != nil {
			log.Fatalf("connect: %v", err)
		}
		defer nc.Close()
		js, err := nc.JetStream(nats.PublishAsyncMaxPending(*maxPending),
			nats.PublishAsyncErrHandler(func(_ nats.JetStream, _ *nats.Msg, err error) {
				if failed.Add(1) == 1 {
					log.Printf("PubAck error: %v", err)
				}
			}))
		if err != nil {
			log.Fatalf("jetstream: %v", err)
		}
		wg.Add(1)
		ready.Add(1)
		go func(count int) {
			defer wg.Done()
			msg := make([]byte, *ms)
			ready.Done()
			<-start
			t0 := time.Now()
			if *syncPub {
				for j := 0; j < count; j++ {
					if _, err := js.Publish(subject, msg); err != nil {
						log.Fatalf("publish: %v", err)
					}
				}
			} else {
				for j := 0; j < count; j++ {
					for {
						_, err := js.PublishAsync(subject, msg)
						if err == nil {
							break
						}
						// nats.go gives up on a full window after 200 ms; the message was
						// not sent, so send it again.
						if !strings.Contains(err.Error(), "stalled") {
							log.Fatalf("publish: %v", err)
						}
					}
				}
				<-js.PublishAsyncComplete()
			}
			bm.AddPubSample(bench.NewSample(count, *ms, t0, time.Now(), nc))
		}(counts[i])
	}
	ready.Wait()
	close(start)
	wg.Wait()
	bm.Close()
	if f := failed.Load(); f > 0 {
		log.Fatalf("%d publishes got an error instead of a PubAck", f)
	}
	fmt.Print(bm.Report())
	if *jsonOut != "" {
		secs := bm.Pubs.Duration().Seconds()
		out, _ := json.Marshal(map[string]interface{}{
			"msgs_per_sec": float64(*n) / secs,
			"msgs":         *n,
			"size":         *ms,
			"seconds":      secs,
		})
		if err := os.WriteFile(*jsonOut, append(out, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

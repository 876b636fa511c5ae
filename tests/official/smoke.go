// nats.go (the official Go client) against a NATS server: pub/sub with a wildcard, a queue
// group, request/reply, headers, no responders. Exits 0 and prints OK on success.
// Usage: go run smoke.go nats://127.0.0.1:PORT
package main

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fmt.Printf("FAIL: "+format+"\n", args...)
		os.Exit(1)
	}
}

func main() {
	nc, err := nats.Connect(os.Args[1])
	check(err == nil, "connect: %v", err)
	check(nc.HeadersSupported(), "headers not supported")

	sub, _ := nc.SubscribeSync("greet.*")
	m := nats.NewMsg("greet.joe")
	m.Data = []byte("hello")
	m.Header.Set("Trace-Id", "42")
	check(nc.PublishMsg(m) == nil, "publish")
	got, err := sub.NextMsg(5 * time.Second)
	check(err == nil && got.Subject == "greet.joe" && string(got.Data) == "hello" &&
		got.Header.Get("Trace-Id") == "42", "pub/sub: %v %v", got, err)

	var a, b int64
	nc.QueueSubscribe("jobs", "workers", func(*nats.Msg) { atomic.AddInt64(&a, 1) })
	nc.QueueSubscribe("jobs", "workers", func(*nats.Msg) { atomic.AddInt64(&b, 1) })
	for i := 0; i < 1000; i++ {
		nc.Publish("jobs", []byte("x"))
	}
	nc.Flush()
	for i := 0; i < 100 && atomic.LoadInt64(&a)+atomic.LoadInt64(&b) < 1000; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	check(a+b == 1000 && a > 300 && b > 300, "queue split %d/%d", a, b)

	nc.Subscribe("svc", func(m *nats.Msg) { m.Respond(append([]byte("pong:"), m.Data...)) })
	reply, err := nc.Request("svc", []byte("ping"), 5*time.Second)
	check(err == nil && string(reply.Data) == "pong:ping", "request: %v %v", reply, err)

	_, err = nc.Request("nobody.home", nil, 5*time.Second)
	check(errors.Is(err, nats.ErrNoResponders), "no responders: %v", err)

	nc.Drain()
	fmt.Println("OK")
}

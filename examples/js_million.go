// js_million: the "done when", with nats.go: `publish` creates the file stream MILLION
// (subjects m.>) and publishes 1,000,000 messages of 16 B with acks (PublishAsync, 4,000 in
// flight), printing the acks and the rate; `check` prints the stream state and three
// messages. Between the two: kill -9 the server and start it again on the same store.
// Usage: GO111MODULE=off GOPATH=/usr/share/gocode go run examples/js_million.go publish|check nats://127.0.0.1:4222
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

func main() {
	nc, err := nats.Connect(os.Args[2])
	if err != nil {
		panic(err)
	}
	js, _ := nc.JetStream(nats.PublishAsyncMaxPending(4000))
	switch os.Args[1] {
	case "publish":
		_, err = js.AddStream(&nats.StreamConfig{Name: "MILLION", Subjects: []string{"m.>"}, Storage: nats.FileStorage})
		if err != nil {
			panic(err)
		}
		start := time.Now()
		payload := make([]byte, 16)
		var futs []nats.PubAckFuture
		for i := 0; i < 1000000; i++ {
			f, err := js.PublishAsync(fmt.Sprintf("m.%d", i%100), payload)
			if err != nil {
				panic(err)
			}
			futs = append(futs, f)
		}
		<-js.PublishAsyncComplete()
		acked := 0
		var last uint64
		for _, f := range futs {
			select {
			case a := <-f.Ok():
				acked++
				if a.Sequence > last {
					last = a.Sequence
				}
			case e := <-f.Err():
				fmt.Println("error", e)
			}
		}
		fmt.Printf("acked %d, last seq %d, %.0f msgs/s\n", acked, last, 1e6/time.Since(start).Seconds())
	case "check":
		info, err := js.StreamInfo("MILLION")
		if err != nil {
			panic(err)
		}
		fmt.Printf("state: msgs %d first %d last %d bytes %d subjects %d\n", info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, info.State.Bytes, info.State.NumSubjects)
		for _, seq := range []uint64{1, 500000, 1000000} {
			m, err := js.GetMsg("MILLION", seq)
			if err != nil {
				fmt.Println("get", seq, err)
				continue
			}
			fmt.Println("seq", seq, m.Subject, len(m.Data))
		}
	}
}

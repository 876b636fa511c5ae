// nats.go's JetStream (the official Go client) against a server started with -js: a file
// stream is created, takes synchronous and asynchronous acknowledged publishes (and
// deduplicates one), answers info, message get and delete, purge, and is deleted. Exits 0
// and prints OK on success.
// Usage: go run jetstream.go nats://127.0.0.1:PORT
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
)

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fmt.Printf("FAIL: "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	check(err == nil, "%s: %v", what, err)
}

func main() {
	nc, err := nats.Connect(os.Args[1])
	must(err, "connect")
	defer nc.Close()
	js, err := nc.JetStream()
	must(err, "jetstream")
	_, err = js.AddStream(&nats.StreamConfig{Name: "GO", Subjects: []string{"go.>"}, Storage: nats.FileStorage})
	must(err, "add stream")
	for i := 0; i < 100; i++ {
		ack, err := js.Publish(fmt.Sprintf("go.%d", i%3), []byte(fmt.Sprintf("m%d", i)))
		must(err, "publish")
		check(ack.Stream == "GO" && ack.Sequence == uint64(i+1), "ack %+v", ack)
	}
	for i := 0; i < 1000; i++ {
		_, err := js.PublishAsync("go.async", []byte("a"))
		must(err, "publish async")
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(10 * time.Second):
		check(false, "async acks did not all come")
	}
	first, err := js.Publish("go.id", []byte("once"), nats.MsgId("x1"))
	must(err, "publish with id")
	again, err := js.Publish("go.id", []byte("once"), nats.MsgId("x1"))
	must(err, "publish again")
	check(again.Duplicate && again.Sequence == first.Sequence, "dedup %+v %+v", first, again)
	_, err = js.Publish("go.0", []byte("x"), nats.ExpectLastSequence(5))
	check(err != nil, "a wrong expected sequence was accepted")
	info, err := js.StreamInfo("GO")
	must(err, "stream info")
	check(info.State.Msgs == 1101 && info.State.LastSeq == 1101, "state %+v", info.State)
	msg, err := js.GetMsg("GO", 2)
	must(err, "get msg")
	check(msg.Subject == "go.1" && string(msg.Data) == "m1", "msg %+v", msg)
	must(js.DeleteMsg("GO", 2), "delete msg")
	_, err = js.GetMsg("GO", 2)
	check(err != nil, "a deleted message was served")
	must(js.PurgeStream("GO", &nats.StreamPurgeRequest{Subject: "go.async"}), "purge")
	info, err = js.StreamInfo("GO")
	must(err, "stream info")
	check(info.State.Msgs == 100, "after purge %+v", info.State)
	names := []string{}
	for n := range js.StreamNames() {
		names = append(names, n)
	}
	check(len(names) == 1 && names[0] == "GO", "names %v", names)
	must(js.DeleteStream("GO"), "delete stream")
	fmt.Println("OK")
}

// nats.go's JetStream consumers, key-value and object store (the official Go client)
// against a server started with -js, used as applications use them:
//   - a work queue: a WorkQueue stream, one durable pull consumer shared by two competing
//     PullSubscribe + Fetch workers, every message processed exactly once (AckSync), the
//     stream empty afterwards; a Fetch with nothing to fetch times out (nats.ErrTimeout);
//   - Ack/AckSync, Nak, NakWithDelay, Term, InProgress; redelivery after AckWait
//     (NumDelivered 2); MaxDeliver 2 (no third delivery);
//   - QueueSubscribe with a durable on two subscribers (each message once overall); an
//     OrderedConsumer subscription (everything in order, then live messages);
//   - DeliverLast, DeliverNew, StartSequence, DeliverLastPerSubject; ConsumerInfo
//     (NumPending, NumAckPending, Delivered, AckFloor), ConsumerNames, ConsumersInfo,
//     DeleteConsumer;
//   - interest retention: a message stays until every consumer has acked it;
//   - key-value: a bucket with History 5 and a TTL, Put/Get/GetRevision, Update with a
//     revision (a wrong one fails), Create (an existing key fails), Delete, Purge, Keys,
//     History, Watch/WatchAll (initial values, the nil marker, live updates), Status;
//   - object store: a 10 MiB object PutBytes/GetBytes equal, GetInfo, List, AddLink (read
//     through the link), Delete.
//
// (nats.go 1.22 has no updates-only watch.) Exits 0 and prints OK on success.
// Usage: go run consumers.go nats://127.0.0.1:PORT
package main

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

var part = "start"

func check(ok bool, format string, args ...interface{}) {
	if !ok {
		fmt.Printf("FAIL in "+part+": "+format+"\n", args...)
		os.Exit(1)
	}
}

func must(err error, what string) {
	check(err == nil, "%s: %v", what, err)
}

// until waits (at most five seconds) for cond.
func until(what string, cond func() bool) {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		check(time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(20 * time.Millisecond)
	}
}

func meta(m *nats.Msg) *nats.MsgMetadata {
	md, err := m.Metadata()
	must(err, "metadata of "+m.Reply)
	return md
}

// noMessage is a Fetch that must time out.
func noMessage(sub *nats.Subscription, wait time.Duration, what string) {
	start := time.Now()
	msgs, err := sub.Fetch(1, nats.MaxWait(wait))
	check(errors.Is(err, nats.ErrTimeout), "%s: got %d messages, error %v", what, len(msgs), err)
	check(time.Since(start) < wait+2*time.Second, "%s: the fetch took %v", what, time.Since(start))
}

func fetch(sub *nats.Subscription, n int, what string) []*nats.Msg {
	msgs, err := sub.Fetch(n, nats.MaxWait(4*time.Second))
	must(err, what)
	check(len(msgs) == n, "%s: %d messages, not %d", what, len(msgs), n)
	return msgs
}

func messages(js nats.JetStreamContext, stream string) uint64 {
	info, err := js.StreamInfo(stream)
	must(err, "stream info "+stream)
	return info.State.Msgs
}

func consumer(js nats.JetStreamContext, stream, name string) *nats.ConsumerInfo {
	info, err := js.ConsumerInfo(stream, name)
	must(err, "consumer info "+name)
	return info
}

func workQueue(js nats.JetStreamContext) {
	part = "work queue"
	_, err := js.AddStream(&nats.StreamConfig{Name: "WQ", Subjects: []string{"wq.>"}, Retention: nats.WorkQueuePolicy})
	must(err, "add stream")
	for i := 0; i < 100; i++ {
		_, err := js.Publish(fmt.Sprintf("wq.%d", i%4), []byte(fmt.Sprintf("job%d", i)))
		must(err, "publish")
	}
	w1, err := js.PullSubscribe("wq.>", "workers", nats.BindStream("WQ"), nats.AckExplicit())
	must(err, "pull subscribe 1")
	w2, err := js.PullSubscribe("wq.>", "workers", nats.BindStream("WQ"))
	must(err, "pull subscribe 2")
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := []string{}
	deadline := time.Now().Add(20 * time.Second)
	for _, sub := range []*nats.Subscription{w1, w2} {
		wg.Add(1)
		go func(sub *nats.Subscription) {
			defer wg.Done()
			for {
				mu.Lock()
				n := len(done)
				mu.Unlock()
				if n >= 100 {
					return
				}
				check(time.Now().Before(deadline), "only %d jobs done", n)
				msgs, err := sub.Fetch(7, nats.MaxWait(time.Second))
				if errors.Is(err, nats.ErrTimeout) {
					continue
				}
				must(err, "fetch")
				for _, m := range msgs {
					check(meta(m).NumDelivered == 1, "redelivered %s", m.Reply)
					must(m.AckSync(), "ack sync")
					mu.Lock()
					done = append(done, string(m.Data))
					mu.Unlock()
				}
			}
		}(sub)
	}
	wg.Wait()
	want := []string{}
	for i := 0; i < 100; i++ {
		want = append(want, fmt.Sprintf("job%d", i))
	}
	sort.Strings(want)
	sort.Strings(done)
	check(reflect.DeepEqual(done, want), "not each job once: %v", done)
	until("an empty work queue", func() bool { return messages(js, "WQ") == 0 })
	info := consumer(js, "WQ", "workers")
	check(info.NumPending == 0 && info.NumAckPending == 0, "pending %+v", info)
	check(info.Delivered.Stream == 100 && info.AckFloor.Stream == 100, "delivered %+v ack floor %+v", info.Delivered, info.AckFloor)
	noMessage(w1, 500*time.Millisecond, "fetch 1 from an empty queue")
	msgs, err := w2.Fetch(5, nats.MaxWait(500*time.Millisecond))
	check(errors.Is(err, nats.ErrTimeout), "fetch 5 from an empty queue: %d messages, error %v", len(msgs), err)
	// a job published now goes to a waiting fetch
	go func() {
		time.Sleep(200 * time.Millisecond)
		_, err := js.Publish("wq.late", []byte("late"))
		must(err, "publish late")
	}()
	late := fetch(w1, 1, "fetch a late job")
	check(string(late[0].Data) == "late", "late %q", late[0].Data)
	must(late[0].AckSync(), "ack late")
	must(w1.Unsubscribe(), "unsubscribe")
	must(w2.Unsubscribe(), "unsubscribe")
	must(js.DeleteStream("WQ"), "delete stream")
}

func acks(js nats.JetStreamContext) {
	part = "acks"
	_, err := js.AddStream(&nats.StreamConfig{Name: "ACKS", Subjects: []string{"acks.>"}})
	must(err, "add stream")
	for _, s := range []string{"a", "b", "c"} {
		_, err := js.Publish("acks."+s, []byte(s))
		must(err, "publish")
	}
	sub, err := js.PullSubscribe("acks.>", "acker", nats.AckWait(1500*time.Millisecond))
	must(err, "pull subscribe")
	abc := fetch(sub, 3, "fetch 3")
	a, b, c := abc[0], abc[1], abc[2]
	check(string(a.Data)+string(b.Data)+string(c.Data) == "abc", "got %q %q %q", a.Data, b.Data, c.Data)
	// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>
	check(len(a.Reply) > 25 && a.Reply[:25] == "$JS.ACK.ACKS.acker.1.1.1.", "reply %s", a.Reply)
	md := meta(c)
	check(md.Stream == "ACKS" && md.Consumer == "acker" && md.Sequence.Stream == 3 && md.Sequence.Consumer == 3 &&
		md.NumDelivered == 1 && md.NumPending == 0, "metadata %+v", md)
	must(a.AckSync(), "ack sync")
	must(b.Nak(), "nak")
	must(c.Term(), "term")
	b2 := fetch(sub, 1, "fetch the nak'ed")[0]
	md = meta(b2)
	check(string(b2.Data) == "b" && md.NumDelivered == 2 && md.Sequence.Stream == 2 && md.Sequence.Consumer == 4, "after nak %+v", md)
	for i := 0; i < 4; i++ {
		must(b2.InProgress(), "in progress")
		noMessage(sub, 600*time.Millisecond, "a message in progress")
	}
	must(b2.NakWithDelay(time.Second), "nak with delay")
	noMessage(sub, 400*time.Millisecond, "a message nak'ed with a delay")
	b3 := fetch(sub, 1, "fetch after the delay")[0]
	check(string(b3.Data) == "b" && meta(b3).NumDelivered == 3, "after delay %+v", meta(b3))
	must(b3.AckSync(), "ack sync")
	check(errors.Is(b3.Ack(), nats.ErrMsgAlreadyAckd), "acked twice")
	info, err := sub.ConsumerInfo()
	must(err, "consumer info")
	check(info.NumPending == 0 && info.NumAckPending == 0 && info.NumRedelivered == 0, "info %+v", info)
	check(info.Delivered.Stream == 3 && info.Delivered.Consumer == 5, "delivered %+v", info.Delivered)
	check(info.AckFloor.Stream == 3 && info.AckFloor.Consumer == 5, "ack floor %+v", info.AckFloor)
	noMessage(sub, 1800*time.Millisecond, "a termed message")
	must(sub.Unsubscribe(), "unsubscribe")

	// redelivery after AckWait, and MaxDeliver
	_, err = js.Publish("acks.d", []byte("d"))
	must(err, "publish")
	sub, err = js.PullSubscribe("acks.d", "retry", nats.AckWait(time.Second), nats.MaxDeliver(2))
	must(err, "pull subscribe")
	d1 := fetch(sub, 1, "first delivery")[0]
	check(string(d1.Data) == "d" && meta(d1).NumDelivered == 1, "first %+v", meta(d1))
	d2 := fetch(sub, 1, "redelivery")[0]
	check(meta(d2).NumDelivered == 2 && meta(d2).Sequence.Stream == 4, "second %+v", meta(d2))
	noMessage(sub, 2500*time.Millisecond, "a third delivery with MaxDeliver 2")
	info, err = sub.ConsumerInfo()
	must(err, "consumer info")
	check(info.NumPending == 0 && info.Delivered.Consumer == 2, "info %+v", info)
	must(sub.Unsubscribe(), "unsubscribe")
	must(js.DeleteStream("ACKS"), "delete stream")
}

func push(js nats.JetStreamContext) {
	part = "push"
	_, err := js.AddStream(&nats.StreamConfig{Name: "PUSH", Subjects: []string{"push.>"}})
	must(err, "add stream")
	got := make(chan int, 200)
	var counts [2]int
	var mu sync.Mutex
	subs := []*nats.Subscription{}
	for n := 0; n < 2; n++ {
		n := n
		sub, err := js.QueueSubscribe("push.>", "grp", func(m *nats.Msg) {
			i, _ := strconv.Atoi(string(m.Data))
			mu.Lock()
			counts[n]++
			mu.Unlock()
			must(m.Ack(), "ack")
			got <- i
		}, nats.Durable("pushq"), nats.ManualAck(), nats.AckExplicit())
		must(err, "queue subscribe")
		subs = append(subs, sub)
	}
	for i := 0; i < 50; i++ {
		_, err := js.Publish(fmt.Sprintf("push.%d", i%5), []byte(strconv.Itoa(i)))
		must(err, "publish")
	}
	seen := []int{}
	for len(seen) < 50 {
		select {
		case i := <-got:
			seen = append(seen, i)
		case <-time.After(5 * time.Second):
			check(false, "only %d of 50 through the queue group", len(seen))
		}
	}
	until("the queue subscribers' acks", func() bool { return consumer(js, "PUSH", "pushq").NumAckPending == 0 })
	sort.Ints(seen)
	for i := range seen {
		check(seen[i] == i, "not each message once: %v", seen)
	}
	info := consumer(js, "PUSH", "pushq")
	check(info.Config.DeliverGroup == "grp" && info.PushBound, "config %+v", info.Config)
	check(info.Delivered.Stream == 50 && info.AckFloor.Stream == 50 && info.NumPending == 0, "info %+v", info)
	for _, s := range subs {
		must(s.Unsubscribe(), "unsubscribe")
	}

	// an ordered consumer: everything, in order, then live messages
	ordered := make(chan *nats.Msg, 400)
	osub, err := js.Subscribe("push.>", func(m *nats.Msg) { ordered <- m }, nats.OrderedConsumer())
	must(err, "ordered subscribe")
	next := func(i int) {
		select {
		case m := <-ordered:
			want := strconv.Itoa(i)
			if i >= 50 {
				want = string(bytes.Repeat([]byte(want), 100))
			}
			check(string(m.Data) == want && meta(m).Sequence.Stream == uint64(i+1), "ordered %d: %+v", i, meta(m))
		case <-time.After(5 * time.Second):
			check(false, "ordered consumer: no message %d", i)
		}
	}
	for i := 0; i < 50; i++ {
		next(i)
	}
	for i := 50; i < 300; i++ {
		_, err := js.Publish(fmt.Sprintf("push.%d", i%5), bytes.Repeat([]byte(strconv.Itoa(i)), 100))
		must(err, "publish")
	}
	for i := 50; i < 300; i++ {
		next(i)
	}
	must(osub.Unsubscribe(), "unsubscribe")
	must(js.DeleteStream("PUSH"), "delete stream")
}

func seqs(sub *nats.Subscription, n int) []uint64 {
	out := []uint64{}
	for _, m := range fetch(sub, n, "fetch") {
		must(m.Ack(), "ack")
		out = append(out, meta(m).Sequence.Stream)
	}
	return out
}

func deliverPolicies(js nats.JetStreamContext) {
	part = "deliver policies"
	_, err := js.AddStream(&nats.StreamConfig{Name: "DP", Subjects: []string{"dp.>"}})
	must(err, "add stream")
	for _, s := range "ababa" { // dp.a: 1, 3, 5; dp.b: 2, 4
		_, err := js.Publish("dp."+string(s), []byte{byte(s)})
		must(err, "publish")
	}
	last, err := js.PullSubscribe("dp.>", "last", nats.DeliverLast())
	must(err, "last")
	newSub, err := js.PullSubscribe("dp.>", "new", nats.DeliverNew())
	must(err, "new")
	_, err = js.AddConsumer("DP", &nats.ConsumerConfig{Durable: "start", DeliverPolicy: nats.DeliverByStartSequencePolicy,
		OptStartSeq: 3, AckPolicy: nats.AckExplicitPolicy, FilterSubject: "dp.>"})
	must(err, "add consumer start")
	start, err := js.PullSubscribe("dp.>", "start", nats.Bind("DP", "start"))
	must(err, "bind start")
	info := consumer(js, "DP", "start")
	check(info.NumPending == 3 && info.Config.OptStartSeq == 3, "start %+v", info)
	check(consumer(js, "DP", "new").NumPending == 0, "new has pending")
	check(reflect.DeepEqual(seqs(last, 1), []uint64{5}), "deliver last")
	noMessage(newSub, 500*time.Millisecond, "a deliver-new consumer before a publish")
	_, err = js.Publish("dp.c", []byte("c")) // 6
	must(err, "publish")
	check(reflect.DeepEqual(seqs(newSub, 1), []uint64{6}), "deliver new")
	check(reflect.DeepEqual(seqs(start, 4), []uint64{3, 4, 5, 6}), "start sequence")
	per, err := js.PullSubscribe("dp.>", "per", nats.DeliverLastPerSubject())
	must(err, "last per subject")
	check(consumer(js, "DP", "per").NumPending == 3, "last per subject pending")
	got := seqs(per, 3)
	check(reflect.DeepEqual(got, []uint64{4, 5, 6}), "last per subject %v", got)

	names := []string{}
	for n := range js.ConsumerNames("DP") {
		names = append(names, n)
	}
	sort.Strings(names)
	check(reflect.DeepEqual(names, []string{"last", "new", "per", "start"}), "names %v", names)
	must(js.DeleteConsumer("DP", "last"), "delete consumer")
	_, err = js.ConsumerInfo("DP", "last")
	check(errors.Is(err, nats.ErrConsumerNotFound), "a deleted consumer: %v", err)
	names = []string{}
	for ci := range js.ConsumersInfo("DP") {
		names = append(names, ci.Name)
	}
	sort.Strings(names)
	check(reflect.DeepEqual(names, []string{"new", "per", "start"}), "infos %v", names)
	for _, s := range []*nats.Subscription{newSub, start, per} {
		must(s.Unsubscribe(), "unsubscribe")
	}
	must(js.DeleteStream("DP"), "delete stream")
}

func interest(js nats.JetStreamContext) {
	part = "interest"
	_, err := js.AddStream(&nats.StreamConfig{Name: "INT", Subjects: []string{"int.>"}, Retention: nats.InterestPolicy})
	must(err, "add stream")
	c1, err := js.PullSubscribe("int.>", "c1")
	must(err, "c1")
	c2, err := js.PullSubscribe("int.>", "c2")
	must(err, "c2")
	for i := 0; i < 3; i++ {
		_, err := js.Publish("int.x", []byte{byte('0' + i)})
		must(err, "publish")
	}
	check(messages(js, "INT") == 3, "stored %d", messages(js, "INT"))
	for _, m := range fetch(c1, 3, "c1") {
		must(m.AckSync(), "ack")
	}
	check(messages(js, "INT") == 3, "gone before every consumer acked")
	for _, m := range fetch(c2, 3, "c2") {
		must(m.AckSync(), "ack")
	}
	until("acked messages to leave an interest stream", func() bool { return messages(js, "INT") == 0 })
	must(js.DeleteStream("INT"), "delete stream")
}

type kvt struct {
	key, value string
	rev        uint64
	op         nats.KeyValueOp
}

func entry(e nats.KeyValueEntry) kvt {
	return kvt{e.Key(), string(e.Value()), e.Revision(), e.Operation()}
}

func keyValue(js nats.JetStreamContext) {
	part = "key-value"
	kv, err := js.CreateKeyValue(&nats.KeyValueConfig{Bucket: "cfg", History: 5, TTL: time.Hour})
	must(err, "create bucket")
	rev, err := kv.Put("a", []byte("1"))
	check(err == nil && rev == 1, "put: %d %v", rev, err)
	e, err := kv.Get("a")
	must(err, "get")
	check(entry(e) == kvt{"a", "1", 1, nats.KeyValuePut}, "get %+v", entry(e))
	rev, err = kv.Update("a", []byte("2"), 1)
	check(err == nil && rev == 2, "update: %d %v", rev, err)
	_, err = kv.Update("a", []byte("x"), 1)
	check(errors.Is(err, nats.ErrKeyExists), "an update with a wrong revision: %v", err) // JS error 10071
	rev, err = kv.Create("b", []byte("1"))
	check(err == nil && rev == 3, "create: %d %v", rev, err)
	_, err = kv.Create("b", []byte("again"))
	check(errors.Is(err, nats.ErrKeyExists), "create of an existing key: %v", err)
	must(kv.Delete("b"), "delete")
	_, err = kv.Get("b")
	check(errors.Is(err, nats.ErrKeyNotFound), "a deleted key: %v", err)
	rev, err = kv.Create("b", []byte("reborn"))
	check(err == nil && rev == 5, "create after delete: %d %v", rev, err)
	for _, v := range []string{"3", "4", "5", "6"} { // revisions 6..9
		_, err := kv.PutString("a", v)
		must(err, "put")
	}
	e, err = kv.GetRevision("a", 2)
	check(err == nil && string(e.Value()) == "2", "get revision 2: %v", err)
	hist, err := kv.History("a")
	must(err, "history")
	got := []kvt{}
	for _, h := range hist {
		got = append(got, entry(h))
	}
	want := []kvt{{"a", "2", 2, nats.KeyValuePut}, {"a", "3", 6, nats.KeyValuePut}, {"a", "4", 7, nats.KeyValuePut},
		{"a", "5", 8, nats.KeyValuePut}, {"a", "6", 9, nats.KeyValuePut}}
	check(reflect.DeepEqual(got, want), "history %+v", got)
	_, err = kv.Put("c.d", []byte("x")) // 10
	must(err, "put")
	keys, err := kv.Keys()
	must(err, "keys")
	sort.Strings(keys)
	check(reflect.DeepEqual(keys, []string{"a", "b", "c.d"}), "keys %v", keys)

	w, err := kv.WatchAll()
	must(err, "watch all")
	wa, err := kv.Watch("a")
	must(err, "watch a")
	update := func(w nats.KeyWatcher) nats.KeyValueEntry {
		select {
		case e := <-w.Updates():
			return e
		case <-time.After(5 * time.Second):
			check(false, "no watch update")
		}
		return nil
	}
	got = []kvt{}
	for e := update(w); e != nil; e = update(w) {
		got = append(got, entry(e))
	}
	want = []kvt{{"b", "reborn", 5, nats.KeyValuePut}, {"a", "6", 9, nats.KeyValuePut}, {"c.d", "x", 10, nats.KeyValuePut}}
	check(reflect.DeepEqual(got, want), "initial values %+v", got)
	check(entry(update(wa)) == kvt{"a", "6", 9, nats.KeyValuePut}, "watch a")
	check(update(wa) == nil, "watch a: no end of initial values")
	_, err = kv.Put("a", []byte("live")) // 11
	must(err, "put")
	must(kv.Delete("c.d"), "delete") // 12
	check(entry(update(w)) == kvt{"a", "live", 11, nats.KeyValuePut}, "live put")
	check(entry(update(w)) == kvt{"c.d", "", 12, nats.KeyValueDelete}, "live delete")
	check(entry(update(wa)) == kvt{"a", "live", 11, nats.KeyValuePut}, "watch a: live put")
	must(w.Stop(), "stop")
	must(wa.Stop(), "stop")

	must(kv.Purge("a"), "purge") // 13
	_, err = kv.Get("a")
	check(errors.Is(err, nats.ErrKeyNotFound), "a purged key: %v", err)
	hist, err = kv.History("a")
	must(err, "history")
	check(len(hist) == 1 && hist[0].Revision() == 13 && hist[0].Operation() == nats.KeyValuePurge, "history after purge %v", hist)
	keys, err = kv.Keys()
	check(err == nil && reflect.DeepEqual(keys, []string{"b"}), "keys %v %v", keys, err)

	status, err := kv.Status()
	must(err, "status")
	check(status.Bucket() == "cfg" && status.History() == 5 && status.TTL() == time.Hour, "status %+v", status)
	// b: 3, 4 (delete), 5; c.d: 10, 12 (delete); a: 13 (purge)
	check(status.Values() == 6, "%d values", status.Values())
	must(js.DeleteKeyValue("cfg"), "delete bucket")
}

func objectStore(js nats.JetStreamContext) {
	part = "object store"
	obs, err := js.CreateObjectStore(&nats.ObjectStoreConfig{Bucket: "files"})
	must(err, "create")
	big := make([]byte, 10*1024*1024)
	_, err = rand.Read(big)
	must(err, "random")
	info, err := obs.PutBytes("big.bin", big)
	must(err, "put")
	check(info.Name == "big.bin" && info.Size == uint64(len(big)) && info.Bucket == "files" && info.Chunks == 80, "info %+v", info)
	_, err = obs.PutString("small.txt", "hello")
	must(err, "put small")
	data, err := obs.GetBytes("big.bin")
	must(err, "get")
	check(bytes.Equal(data, big), "the object came back different (%d bytes)", len(data))
	got, err := obs.GetInfo("big.bin")
	must(err, "get info")
	check(got.Digest == info.Digest && len(got.Digest) > 8 && got.Digest[:8] == "SHA-256=", "digest %q", got.Digest)
	_, err = obs.AddLink("link.bin", got)
	must(err, "add link")
	data, err = obs.GetBytes("link.bin")
	check(err == nil && bytes.Equal(data, big), "read through the link: %v", err)
	list, err := obs.List()
	must(err, "list")
	names := []string{}
	for _, o := range list {
		names = append(names, o.Name)
	}
	sort.Strings(names)
	check(reflect.DeepEqual(names, []string{"big.bin", "link.bin", "small.txt"}), "list %v", names)
	must(obs.Delete("link.bin"), "delete link")
	must(obs.Delete("big.bin"), "delete")
	_, err = obs.GetBytes("big.bin")
	check(errors.Is(err, nats.ErrObjectNotFound), "a deleted object: %v", err)
	list, err = obs.List()
	check(err == nil && len(list) == 1 && list[0].Name == "small.txt", "list after delete %v %v", list, err)
	status, err := obs.Status()
	check(err == nil && status.Bucket() == "files", "status %v", err)
	// the small object and its info, and the deletion markers of big.bin and link.bin
	check(messages(js, "OBJ_files") == 4, "%d messages left", messages(js, "OBJ_files"))
	must(js.DeleteObjectStore("files"), "delete store")
}

func main() {
	nc, err := nats.Connect(os.Args[1])
	must(err, "connect")
	defer nc.Close()
	js, err := nc.JetStream(nats.MaxWait(5 * time.Second))
	must(err, "jetstream")
	go func() {
		time.Sleep(90 * time.Second)
		check(false, "did not finish in 90 seconds")
	}()
	workQueue(js)
	acks(js)
	push(js)
	deliverPolicies(js)
	interest(js)
	keyValue(js)
	objectStore(js)
	fmt.Println("OK")
}

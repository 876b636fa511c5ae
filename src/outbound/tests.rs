//! Unit tests of the outbound queue: the scheduled token and the stall (backpressure).

use super::*;
use std::sync::Arc;

#[test]
fn token_is_taken_once() {
    let q = Outbound::new();
    let mut b = Batch::new();
    b.push(b"PONG\r\n");
    let token = q.push(b).expect("first push takes the token");
    assert!(q.push(Batch::new()).is_none(), "token already taken");
    assert_eq!(q.pending(), 6);
    let b = q.pop().unwrap();
    q.written(b.len());
    assert!(q.pop().is_some());
    assert!(q.release(token).is_none(), "queue empty: token given back");
    assert!(q.push(Batch::new()).is_some(), "token free again");
}

#[test]
fn release_reclaims_when_a_push_raced() {
    let q = Outbound::new();
    let token = q.push(Batch::new()).unwrap();
    q.pop();
    // A producer pushes while we hold the token: it must not ring.
    assert!(q.push(Batch::new()).is_none());
    // Our release then finds the batch and keeps the token.
    let token = q.release(token).expect("kept");
    assert!(q.pop().is_some());
    assert!(q.release(token).is_none());
}

#[test]
fn no_lost_wakeups_under_contention() {
    // Several producers push; one "writer" drains whenever it is handed the token through
    // a channel. Every batch must be drained exactly once.
    let q = Arc::new(Outbound::new());
    let (tx, rx) = crossbeam_channel::unbounded::<Token>();
    let producers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            let tx = tx.clone();
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    let mut b = Batch::new();
                    b.push(b"x");
                    if let Some(token) = q.push(b) {
                        tx.send(token).unwrap();
                    }
                }
            })
        })
        .collect();
    drop(tx);
    let writer = {
        let q = q.clone();
        std::thread::spawn(move || {
            let mut drained = 0usize;
            while let Ok(mut token) = rx.recv() {
                loop {
                    while let Some(b) = q.pop() {
                        drained += b.len();
                        q.written(b.len());
                    }
                    match q.release(token) {
                        Some(kept) => token = kept,
                        None => break,
                    }
                }
            }
            drained
        })
    };
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(writer.join().unwrap(), 80_000);
    assert_eq!(q.pending(), 0);
    assert!(q.is_empty());
}

fn policy() -> StallPolicy {
    StallPolicy {
        threshold: 100,
        progress_window: Duration::from_secs(30),
        wedged_after: Duration::ZERO,
        max_wait: Duration::from_secs(30),
    }
}

#[test]
fn stall_is_released_by_the_writer() {
    let q = Arc::new(Outbound::new());
    let mut b = Batch::new();
    b.push(&[0u8; 1000]);
    let _token = q.push(b);
    let q2 = q.clone();
    let drainer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        let b = q2.pop().unwrap();
        q2.written(b.len());
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    q.stall(&policy(), deadline, || false);
    drainer.join().unwrap();
    assert!(q.pending() <= 100, "woken once drained, not timed out");
}

/// An async producer's stall ([`StallWait`]): pending while the queue is over the threshold
/// (with the end of its progress window as the time to look again), woken by the writer's
/// progress, and done once the queue has drained.
#[test]
fn an_async_stall_is_woken_by_the_writer() {
    struct Woken(std::sync::Mutex<bool>, std::sync::Condvar);
    impl std::task::Wake for Woken {
        fn wake(self: Arc<Self>) {
            *self.0.lock().unwrap() = true;
            self.1.notify_all();
        }
    }
    let q = Arc::new(Outbound::new());
    let mut b = Batch::new();
    b.push(&[0u8; 1000]);
    let _token = q.push(b);
    let woken = Arc::new(Woken(
        std::sync::Mutex::new(false),
        std::sync::Condvar::new(),
    ));
    let waker = std::task::Waker::from(woken.clone());
    let start = Instant::now();
    let deadline = start + Duration::from_secs(30);
    let mut wait = q.stall_wait(&policy(), deadline);
    match wait.poll(&waker, || false) {
        StallPoll::Until(at) => assert!(at > start && at <= deadline, "a window's end"),
        StallPoll::Done => panic!("1000 bytes pending over a threshold of 100: it waits"),
    }
    let q2 = q.clone();
    let drainer = std::thread::spawn(move || {
        let b = q2.pop().unwrap();
        q2.written(b.len());
    });
    let mut flag = woken.0.lock().unwrap();
    while !*flag {
        flag = woken.1.wait(flag).unwrap();
    }
    drop(flag);
    drainer.join().unwrap();
    assert_eq!(wait.poll(&waker, || false), StallPoll::Done, "drained");
}

/// A stalled producer stops waiting as soon as it is told to give up (the client
/// closed) and notified, not at the end of its progress window.
#[test]
fn stall_ends_when_notified_to_give_up() {
    let q = Arc::new(Outbound::new());
    let mut b = Batch::new();
    b.push(&[0u8; 1000]);
    let _token = q.push(b);
    let closing = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = {
        let (q, closing) = (q.clone(), closing.clone());
        std::thread::spawn(move || {
            // A window and a deadline far longer than the test may take.
            let p = StallPolicy {
                progress_window: Duration::from_secs(3600),
                ..policy()
            };
            let deadline = Instant::now() + Duration::from_secs(3600);
            q.stall(&p, deadline, || closing.load(Ordering::SeqCst));
            let _ = done_tx.send(());
        })
    };
    // Let the producer go to sleep on the condition variable (it counts itself first).
    while q.stall.waiters.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(100));
    // What `Client::close` does: decide, then wake the stalled producers.
    closing.store(true, Ordering::SeqCst);
    q.wake_stalled();
    done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the stalled producer stopped waiting once notified");
    waiter.join().unwrap();
}

/// A client that takes nothing for `wedged_after` is wedged: the producer stops
/// waiting, later stalls return at once, and the next byte written ends it.
#[test]
fn stall_gives_up_once_wedged_and_then_skips() {
    let q = Outbound::new();
    let mut b = Batch::new();
    b.push(&[0u8; 1000]);
    let _token = q.push(b);
    let p = StallPolicy {
        progress_window: Duration::from_millis(10),
        wedged_after: Duration::from_millis(30),
        ..policy()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    q.stall(&p, deadline, || false);
    assert!(
        q.stuck.load(Ordering::Relaxed),
        "no writer progress for wedged_after: marked wedged"
    );
    assert_eq!(
        q.stall(&p, deadline, || false),
        Duration::ZERO,
        "wedged clients do not stall producers"
    );
    q.written(10);
    assert!(!q.stuck.load(Ordering::Relaxed), "progress clears the flag");
    assert_ne!(
        q.blocked_since.load(Ordering::Relaxed),
        0,
        "but 10 bytes are less than WEDGE_PROGRESS: the clock runs on"
    );
    assert_eq!(
        q.stall(&p, deadline, || false),
        Duration::ZERO,
        "so the next stall finds it wedged again"
    );
    assert!(q.stuck.load(Ordering::Relaxed));
}

/// A client that takes a trickle (a byte now and then) is wedged all the same: a few
/// bytes must not keep its publishers waiting, or one client reading a byte every few
/// hundred milliseconds would throttle every publisher on its subjects for good.
#[test]
fn a_trickle_of_progress_is_still_wedged() {
    let q = Arc::new(Outbound::new());
    let mut b = Batch::new();
    b.push(&vec![0u8; 1 << 20]);
    let _token = q.push(b);
    let p = StallPolicy {
        progress_window: Duration::from_millis(5),
        wedged_after: Duration::from_millis(50),
        ..policy()
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            q.stall(&p, Instant::now() + Duration::from_secs(3600), || false);
            let _ = done_tx.send(());
        })
    };
    q.write_blocked();
    // One byte every 2 ms until the producer stops waiting; a bound on the bytes, not
    // the time, so a slow machine cannot fail it: by then far more than wedged_after has
    // passed.
    let mut trickled = 0;
    while done_rx.try_recv().is_err() {
        assert!(trickled < 5_000, "a trickle kept the producer waiting");
        q.written(1);
        trickled += 1;
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(q.stuck.load(Ordering::Relaxed), "marked wedged");
    assert_eq!(
        q.stall(&p, Instant::now() + Duration::from_secs(3600), || false),
        Duration::ZERO,
        "and later stalls return at once"
    );
    producer.join().unwrap();
    // Real progress, WEDGE_PROGRESS bytes, stops the clock and clears the flag.
    q.written(WEDGE_PROGRESS as usize);
    assert_eq!(q.blocked_since.load(Ordering::Relaxed), 0, "clock stopped");
    assert!(!q.stuck.load(Ordering::Relaxed), "no longer wedged");
}

/// A full socket is not a wedged client: a subscriber that reads slowly fills its socket
/// all the time, and its publishers must keep waiting for it, or they pour into its queue
/// (what Go's CPU-starved subscribers showed: hundreds of MiB, then slow-consumer cuts).
/// The producer here waits until the writer drains, however often the writer found the
/// socket full meanwhile.
#[test]
fn a_full_socket_keeps_producers_waiting() {
    let q = Arc::new(Outbound::new());
    let mut b = Batch::new();
    b.push(&[0u8; 1000]);
    let _token = q.push(b);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            let p = StallPolicy {
                progress_window: Duration::from_millis(5),
                wedged_after: Duration::from_secs(3600),
                ..policy()
            };
            q.stall(&p, Instant::now() + Duration::from_secs(3600), || false);
            let _ = done_tx.send(q.pending());
        })
    };
    while q.stall.waiters.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    // The writer keeps finding the socket full, across many progress windows.
    for _ in 0..10 {
        q.write_blocked();
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        done_rx.try_recv().is_err(),
        "the producer still waits for a client that is slow, not wedged"
    );
    let b = q.pop().unwrap();
    q.written(b.len());
    let left = done_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("released by the drain");
    assert!(left <= 100, "it waited for the queue to drain");
    assert!(!q.stuck.load(Ordering::Relaxed));
    assert_eq!(
        q.blocked_since.load(Ordering::Relaxed),
        0,
        "an empty queue stops the clock (1000 bytes are less than WEDGE_PROGRESS)"
    );
    producer.join().unwrap();
}

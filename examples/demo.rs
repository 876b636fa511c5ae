//! A tour of beaver with the official Rust client, async-nats: publish/subscribe, wildcards,
//! a queue group, request/reply, headers and no-responders.
//!
//! Start beaver in one terminal (`cargo run --release`), then run
//! `cargo run --example demo` (or `cargo run --example demo -- nats://HOST:PORT`).

use futures::StreamExt;
use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    let client = async_nats::connect(&url).await?;
    let info = client.server_info();
    println!(
        "connected to {} ({}), protocol of nats-server {}, max_payload {} bytes",
        url, info.server_name, info.version, info.max_payload
    );

    // Publish/subscribe with a wildcard.
    let mut greetings = client.subscribe("greet.*").await?;
    client.publish("greet.joe", "hello joe".into()).await?;
    let msg = greetings.next().await.ok_or("subscription ended")?;
    println!("[pub/sub]  {} -> {:?}", msg.subject, msg.payload);

    // A queue group: each message goes to one member.
    let mut worker_a = client.queue_subscribe("jobs", "workers".into()).await?;
    let mut worker_b = client.queue_subscribe("jobs", "workers".into()).await?;
    for i in 0..10 {
        client.publish("jobs", format!("job {i}").into()).await?;
    }
    client.flush().await?;
    let (mut a, mut b) = (0, 0);
    while a + b < 10 {
        tokio::select! {
            Some(_) = worker_a.next() => a += 1,
            Some(_) = worker_b.next() => b += 1,
        }
    }
    println!("[queue]    10 jobs split {a}/{b} between two workers");

    // Request/reply.
    let mut service = client.subscribe("time.now").await?;
    let responder = client.clone();
    tokio::spawn(async move {
        while let Some(req) = service.next().await {
            if let Some(reply) = req.reply {
                let _ = responder
                    .publish(reply, "it is beaver o'clock".into())
                    .await;
            }
        }
    });
    let answer = client.request("time.now", "".into()).await?;
    println!("[request]  time.now -> {:?}", answer.payload);

    // Headers.
    let mut with_headers = client.subscribe("audit").await?;
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Trace-Id", "42");
    client
        .publish_with_headers("audit", headers, "event".into())
        .await?;
    let msg = with_headers.next().await.ok_or("subscription ended")?;
    let trace_id = msg
        .headers
        .as_ref()
        .and_then(|h| h.get("Trace-Id"))
        .map_or("(missing)", |v| v.as_str());
    println!("[headers]  Trace-Id = {trace_id}");

    // No responders: the server answers a request nobody listens to at once.
    let started = std::time::Instant::now();
    match tokio::time::timeout(
        Duration::from_secs(5),
        client.request("nobody.home", "".into()),
    )
    .await
    {
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => println!(
            "[no resp.] the server said at once that nobody listens (after {:?})",
            started.elapsed()
        ),
        Ok(Err(e)) => println!("[no resp.] unexpected error: {e}"),
        other => println!("[no resp.] unexpected: {other:?}"),
    }
    client.drain().await?;
    Ok(())
}

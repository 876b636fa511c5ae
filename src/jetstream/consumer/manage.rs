//! Creating, finding, deleting and recovering an account's consumers (nats-server's
//! `addConsumerWithAssignment` and `stream.deleteConsumer`): the checks that need the stream
//! and its other consumers, in nats-server's order, with its errors.

use super::config::{is_subset, AckPolicy, ConsumerConfig, DeliverPolicy, MAX_NAME_LEN};
use super::{ephemeral_name, persist, Consumer, NewConsumer};
use crate::jetstream::config::Retention;
use crate::jetstream::errors::{self, ApiError};
use crate::jetstream::stream::Stream;
use crate::jetstream::JsAccount;
use std::sync::Arc;

impl JsAccount {
    /// The consumer `name` of stream `stream`.
    pub fn consumer(&self, stream: &str, name: &str) -> Option<Arc<Consumer>> {
        self.stream(stream)?.consumers.read().get(name).cloned()
    }

    /// Consumers of all streams (for counts).
    pub fn consumer_count(&self) -> usize {
        self.stream_list()
            .iter()
            .map(|s| s.consumers.read().len())
            .sum()
    }

    /// Creates a consumer on `stream`, or updates the existing one of the same name when
    /// the change is allowed. `config` is as requested: defaults and checks come here.
    pub fn add_consumer(
        self: &Arc<Self>,
        stream: &Arc<Stream>,
        mut config: ConsumerConfig,
    ) -> Result<(Arc<Consumer>, super::ConsumerInfo), ApiError> {
        let stream_config = stream.config();
        config.apply_defaults();
        config.check(&stream_config)?;
        // One creation at a time in an account: two racing creates of one durable, or of
        // overlapping work-queue consumers, cannot both pass the checks.
        let _one = self.creating.lock();
        let given = if !config.durable_name.is_empty() {
            config.durable_name.clone()
        } else {
            config.name.clone()
        };
        if !given.is_empty() {
            let existing = stream.consumers.read().get(&given).cloned();
            if let Some(c) = existing {
                let mut old = c.config();
                if old.durable_name.is_empty() && config.inactive_threshold == 0 {
                    // An ephemeral's threshold was stamped with the default at creation.
                    old.inactive_threshold = 0;
                }
                old.check_update(&config)?;
                if config.durable_name.is_empty() && config.inactive_threshold <= 0 {
                    config.inactive_threshold = super::config::DEFAULT_INACTIVE_THRESHOLD;
                }
                c.update(config);
                let info = c.info();
                return Ok((c, info));
            }
        }
        let count = stream.consumers.read().len() as i64;
        if stream_config.max_consumers > 0 && count >= stream_config.max_consumers {
            return Err(errors::e(400, 10026, "maximum consumers limit reached"));
        }
        if stream_config.retention == Retention::Workqueue && !config.direct {
            if config.ack_policy != AckPolicy::Explicit {
                return Err(errors::e(
                    400,
                    10098,
                    "workqueue stream requires explicit ack",
                ));
            }
            let others = stream.consumer_list();
            if !others.is_empty() {
                if config.filter_subject.is_empty() {
                    return Err(errors::e(
                        400,
                        10099,
                        "multiple non-filtered consumers not allowed on workqueue stream",
                    ));
                }
                let f = config.filter_subject.as_bytes();
                let unique = others.iter().all(|o| {
                    let of = o.config().filter_subject;
                    !of.is_empty() && !is_subset(f, of.as_bytes()) && !is_subset(of.as_bytes(), f)
                });
                if !unique {
                    return Err(errors::e(
                        400,
                        10100,
                        "filtered consumer not unique on workqueue stream",
                    ));
                }
            }
            if config.deliver_policy != DeliverPolicy::All {
                return Err(errors::e(
                    400,
                    10101,
                    "consumer must be deliver all on workqueue stream",
                ));
            }
        }
        let durable = !config.durable_name.is_empty();
        let name = if durable {
            if config.durable_name.len() > MAX_NAME_LEN {
                return Err(errors::f(
                    400,
                    10102,
                    format!("consumer name is too long, maximum allowed is {MAX_NAME_LEN}"),
                ));
            }
            config.durable_name.clone()
        } else if !config.name.is_empty() {
            config.name.clone()
        } else {
            // The configuration keeps no name (nats-server reports none for these).
            let taken = stream.consumers.read();
            ephemeral_name(|n| taken.contains_key(n))
        };
        if !super::config::is_valid_name(&name) {
            return Err(errors::e(
                400,
                10103,
                "durable name can not contain '.', '*', '>'",
            ));
        }
        let dir = match (&stream.dir, durable && !config.mem_storage) {
            (Some(d), true) => Some(d.join("obs").join(&name)),
            _ => None,
        };
        let c = Consumer::new(
            self,
            stream,
            NewConsumer {
                config,
                name: name.clone(),
                created: crate::jetstream::json::now_nanos(),
                dir,
                saved: None,
                journal: Vec::new(),
            },
        );
        c.save_config();
        c.save_state();
        c.bind_interest();
        // The info as created, before its thread delivers anything (nats-server's
        // `initialInfo`).
        let info = c.info();
        self.register(stream, &c)?;
        self.advise(&c, "create");
        Ok((c, info))
    }

    /// Adds `c` to its stream and starts it.
    fn register(&self, stream: &Arc<Stream>, c: &Arc<Consumer>) -> Result<(), ApiError> {
        stream.consumers.write().insert(c.name.clone(), c.clone());
        let subject = format!("$JS.ACK.{}.{}.>", stream.name, c.name);
        let sid = format!("ack:{}:{}", stream.name, c.name);
        *c.ack_sub.lock() = self.subscribe(subject.as_bytes(), sid.as_bytes());
        if let Err(e) = c.start() {
            c.unsubscribe();
            stream.consumers.write().remove(&c.name);
            return Err(errors::f(
                500,
                10012,
                format!("could not start the consumer's thread: {e}"),
            ));
        }
        Ok(())
    }

    /// Deletes consumer `name` of `stream` (and its saved state). Returns whether it
    /// existed.
    pub fn delete_consumer(&self, stream: &str, name: &str) -> bool {
        let Some(s) = self.stream(stream) else {
            return false;
        };
        let removed = s.consumers.write().remove(name);
        let Some(c) = removed else { return false };
        c.stop(true);
        self.advise(&c, "delete");
        // Messages only it held back in an interest stream may go now.
        if s.config().retention == Retention::Interest {
            let st = s.lock();
            let state = st.store.state();
            drop(st);
            let seqs: Vec<u64> = (state.first_seq..=state.last_seq).take(1 << 20).collect();
            if state.msgs > 0 {
                s.acked(&seqs);
            }
        }
        true
    }

    /// Publishes `$JS.EVENT.ADVISORY.CONSUMER.CREATED|DELETED.<stream>.<consumer>`
    /// (`action` is `create` or `delete`), as nats-server does.
    fn advise(&self, c: &Consumer, action: &str) {
        let word = if action == "create" {
            "CREATED"
        } else {
            "DELETED"
        };
        let subject = format!(
            "$JS.EVENT.ADVISORY.CONSUMER.{word}.{}.{}",
            c.stream_name, c.name
        );
        let body = super::ack::consumer_action_advisory(c, action);
        self.publish_internal(&subject, &body);
    }

    /// Publishes a message of the server (an advisory) into this account, from the calling
    /// thread, with a cache and outbox of its own, flushed at once.
    pub(crate) fn publish_internal(&self, subject: &str, body: &[u8]) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        crate::delivery::publish_internal(&shared, &self.account, subject, body);
    }

    /// Stops every consumer of `stream` (deleted with it).
    pub(crate) fn stop_consumers(&self, stream: &Stream, remove: bool) {
        let all: Vec<Arc<Consumer>> = std::mem::take(&mut *stream.consumers.write())
            .into_values()
            .collect();
        for c in all {
            c.stop(remove);
        }
    }

    /// Reads back the durable consumers of a recovered file stream.
    pub(crate) fn recover_consumers(self: &Arc<Self>, stream: &Arc<Stream>) {
        let Some(dir) = &stream.dir else { return };
        let Ok(entries) = std::fs::read_dir(dir.join("obs")) else {
            return;
        };
        let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            let (config, created, saved, journal) = match persist::read(&path) {
                Ok(r) => r,
                Err(e) => {
                    log::error!("JetStream: consumer {}: {e}; skipped", path.display());
                    continue;
                }
            };
            if config.durable_name != name {
                log::error!(
                    "JetStream: consumer {}: its name is not its directory's; skipped",
                    path.display()
                );
                continue;
            }
            let c = Consumer::new(
                self,
                stream,
                NewConsumer {
                    config,
                    name: name.clone(),
                    created,
                    dir: Some(path.clone()),
                    saved,
                    journal,
                },
            );
            match self.register(stream, &c) {
                Ok(()) => log::info!(
                    "  Restored consumer '{} > {} > {}'",
                    self.account.name,
                    stream.name,
                    name
                ),
                Err(e) => log::error!("JetStream: consumer {}: {}", path.display(), e.description),
            }
        }
    }
}

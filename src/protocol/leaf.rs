//! The leafnode protocol's bytes: the `INFO` a hub sends and the `CONNECT` a leaf answers
//! with. The operations themselves are the route protocol's without the account (a leafnode
//! connection is bound to one account), parsed and written by [`crate::protocol::route`]
//! with [`Dialect::Leaf`](crate::protocol::route::Dialect):
//! - `LS+ <subject>` and `LS+ <subject> <queue> <weight>`; `LS- <subject> [<queue>]`;
//! - `LMSG <subject> [reply] <size>`; with queue groups the receiver must pick,
//!   `LMSG <subject> + <reply> <queue>... <size>` or `LMSG <subject> | <queue>... <size>`;
//!   with headers `HMSG` (the header size before the total size, as `HPUB`).
//!
//! Source: nats-server 2.9 (`server/leafnode.go`: `createLeafNode`, `sendLeafConnect`,
//! `processLeafnodeInfo`, `processLeafNodeConnect`, `writeLeafSub`; `server/client.go`:
//! `msgHeaderForRouteOrLeaf`), checked by recording a Debian nats-server 2.9.10 hub and
//! leaf talking through a proxy:
//!
//! ```text
//! hub  → leaf  INFO {"server_id":…,"host":"127.0.0.1","port":7422,"headers":true,
//!               "auth_required":true,"max_payload":1048576,"ip":"127.0.0.1:7422",
//!               "client_id":4,"nonce":"…","info_on_connect":true,
//!               "leafnode_urls":["127.0.0.1:7422"]}
//! leaf → hub   CONNECT {"version":"2.9.10","tls_required":false,"server_id":…,"name":…,
//!               "headers":true}
//! hub  → leaf  INFO {…,"connect_info":true,…,"remote_account":"$G"}
//!              LS+ <each subject the hub has interest in> … LS+ $LDS.<random>
//! leaf → hub   LS+ <each subject its clients subscribe to> … LS+ $LDS.<random>
//! ```
//!
//! The `$LDS.` subject is each side's loop detector: a server that receives its own back
//! (`LS+` of the subject it sent) is in a loop and drops the connection with
//! `-ERR 'Loop detected for leafnode account="<account>". Delaying attempt to reconnect
//! for 30s'`.

use serde::{Deserialize, Serialize};

/// The prefix of the loop-detection subject each server sends (nats-server's
/// `leafNodeLoopDetectionSubjectPrefix`).
pub const LOOP_DETECTION_PREFIX: &str = "$LDS.";

/// The leafnode `INFO` (nats-server's `Info`, the fields a leafnode port sends, in its
/// order). A solicited leaf checks that it has a `client_id` and a `leafnode_urls`
/// (nats-server refuses anything else as a wrong port).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LeafInfo {
    /// The hub's server id.
    pub server_id: String,
    /// Its name.
    pub server_name: String,
    /// Its nats-server version.
    pub version: String,
    /// Protocol level (1).
    pub proto: i32,
    /// The runtime version (Go's, for nats-server).
    pub go: String,
    /// The leafnode listen host.
    pub host: String,
    /// The leafnode listen port.
    pub port: u16,
    /// Headers supported.
    pub headers: bool,
    /// nats-server always sets it on the leafnode port: leafs must send `CONNECT`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub auth_required: bool,
    /// TLS required.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tls_required: bool,
    /// The hub's `max_payload`.
    pub max_payload: i64,
    /// `HOST:PORT` of the leafnode port.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub ip: String,
    /// The connection's id on the hub.
    #[serde(rename = "client_id", skip_serializing_if = "is_zero")]
    pub cid: u64,
    /// A nonce (for signed credentials, which beaver does not send).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub nonce: String,
    /// The hub's cluster name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// The hub answers `CONNECT` with an `INFO` (`connect_info`), and the leaf waits for
    /// it before it sends its interest.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub info_on_connect: bool,
    /// This is that answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub connect_info: bool,
    /// Where the leaf can reconnect (the hub cluster's leafnode ports).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leafnode_urls: Option<Vec<String>>,
    /// The account the leaf is bound to on the hub.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub remote_account: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The leafnode `CONNECT`, sent by the soliciting side (nats-server's `leafConnectInfo`,
/// in its order).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct LeafConnect {
    /// The leaf's nats-server version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// User (from the remote URL or the remote's settings).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// Password.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub pass: String,
    /// TLS in use.
    pub tls_required: bool,
    /// The leaf's server id.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub server_id: String,
    /// Its name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The leaf says it is the hub (`hub: true` on a remote): the accepting side takes the
    /// spoke role.
    #[serde(rename = "is_hub", skip_serializing_if = "std::ops::Not::not")]
    pub hub: bool,
    /// The leaf's cluster name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    /// Headers supported.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub headers: bool,
    /// Subjects the leaf will not take (its remote's `deny_imports`): the hub does not
    /// publish them to it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny_pub: Vec<String>,
    /// Set by a gateway on the wrong port.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gateway: String,
    /// Set by clients (never by servers): how a client on the leafnode port is spotted.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang: String,
}

/// The error a server sends when it receives its own loop-detection subject back
/// (nats-server's `handleLeafNodeLoop`).
pub fn loop_detected(account: &str) -> String {
    format!("Loop detected for leafnode account={account:?}. Delaying attempt to reconnect for 30s")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::route::{
        json_line, parse_with, write_leaf_sub, write_leaf_unsub, write_lmsg_line, Dialect, Parsed,
        RmsgLine, RouteOp,
    };

    fn op(buf: &[u8]) -> RouteOp<'_> {
        match parse_with(Dialect::Leaf, buf, 4096, 1 << 20) {
            Ok(Parsed::Op(op, _)) => op,
            other => panic!("{other:?}"),
        }
    }

    /// The bytes nats-server 2.9.10 sent in the recorded session (module docs).
    #[test]
    fn parses_what_nats_server_sends() {
        assert_eq!(
            op(b"LS+ foo\r\n"),
            RouteOp::Sub {
                account: b"",
                subject: b"foo",
                queue: None
            }
        );
        assert_eq!(
            op(b"LS+ bar q1 2\r\n"),
            RouteOp::Sub {
                account: b"",
                subject: b"bar",
                queue: Some((b"q1", 2))
            }
        );
        assert_eq!(
            op(b"LS- bar q1\r\n"),
            RouteOp::Unsub {
                account: b"",
                subject: b"bar",
                queue: Some(b"q1")
            }
        );
        let RouteOp::Msg(m) = op(b"LMSG bar + rr q1 1\r\nx\r\n") else {
            panic!()
        };
        assert_eq!(
            (m.subject, m.reply, m.payload),
            (&b"bar"[..], Some(&b"rr"[..]), &b"x"[..])
        );
        assert_eq!(m.queues.as_slice(), [&b"q1"[..]]);
        let RouteOp::Msg(m) = op(b"HMSG foo 18 20\r\nNATS/1.0\r\nA: b\r\n\r\nhi\r\n") else {
            panic!()
        };
        assert_eq!(m.headers.map(|h| h.0), Some(18));
        assert_eq!(m.reply, None);
        // A route operation is not a leafnode one.
        assert!(parse_with(Dialect::Leaf, b"RS+ $G foo\r\n", 4096, 1 << 20).is_err());
        assert!(parse_with(Dialect::Leaf, b"LS+ a b\r\n", 4096, 1 << 20).is_err());
    }

    #[test]
    fn writes_what_nats_server_writes() {
        let mut out = Vec::new();
        write_leaf_sub(&mut out, b"foo", None);
        write_leaf_sub(&mut out, b"bar", Some((b"q1", 2)));
        write_leaf_unsub(&mut out, b"bar", Some(b"q1"));
        write_leaf_unsub(&mut out, b"foo", None);
        let line = |reply, queues: &[&[u8]], hdr| {
            let mut out = Vec::new();
            write_lmsg_line(
                &mut out,
                &RmsgLine {
                    account: b"$G",
                    subject: b"bar",
                    reply,
                    queues,
                    header_token: hdr,
                    size_token: b"20",
                },
            );
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "LS+ foo\r\nLS+ bar q1 2\r\nLS- bar q1\r\nLS- foo\r\n"
        );
        assert_eq!(line(Some(&b"r"[..]), &[], None), "LMSG bar r 20\r\n");
        assert_eq!(line(None, &[b"q1"], None), "LMSG bar | q1 20\r\n");
        assert_eq!(
            line(Some(&b"rr"[..]), &[b"q1"], None),
            "LMSG bar + rr q1 20\r\n"
        );
        assert_eq!(line(None, &[], Some(&b"18"[..])), "HMSG bar 18 20\r\n");
        let c = LeafConnect {
            version: "2.9.10".into(),
            server_id: "S".into(),
            name: "S".into(),
            headers: true,
            ..LeafConnect::default()
        };
        assert_eq!(
            String::from_utf8(json_line("CONNECT", &c, false)).unwrap(),
            "CONNECT {\"version\":\"2.9.10\",\"tls_required\":false,\"server_id\":\"S\",\
             \"name\":\"S\",\"headers\":true}\r\n"
        );
    }

    #[test]
    fn info_round_trips() {
        let text = r#"{"server_id":"N","server_name":"N","version":"2.9.10","proto":1,"go":"go1.19.8","host":"127.0.0.1","port":38422,"headers":true,"auth_required":true,"max_payload":1048576,"ip":"127.0.0.1:38422","client_id":4,"nonce":"6TfXkWlPgC2RxZg","info_on_connect":true,"leafnode_urls":["127.0.0.1:38422"]}"#;
        let info: LeafInfo = serde_json::from_str(text).unwrap();
        assert_eq!(info.cid, 4);
        assert!(info.info_on_connect && !info.connect_info);
        let line = json_line("INFO", &info, true);
        assert_eq!(line, format!("INFO {text} \r\n").into_bytes());
        assert_eq!(
            loop_detected("$G"),
            "Loop detected for leafnode account=\"$G\". Delaying attempt to reconnect for 30s"
        );
    }
}

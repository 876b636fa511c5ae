//! `permessage-deflate` (RFC 7692) without context takeover, as nats-server negotiates it
//! (`server_no_context_takeover; client_no_context_takeover`): every message is deflated
//! on its own, so neither side keeps a window between messages. flate2 (miniz_oxide, pure
//! Rust) does the compression.

use super::FrameError;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// Inflates one message's payload (with the `00 00 ff ff` tail put back) to at most `limit`
/// bytes.
pub fn inflate(deflated: &[u8], limit: usize) -> Result<Vec<u8>, FrameError> {
    let mut d = Decompress::new(false);
    let mut out: Vec<u8> =
        Vec::with_capacity(deflated.len().saturating_mul(4).clamp(64, limit.max(64)));
    loop {
        if out.len() == out.capacity() {
            if out.len() >= limit {
                return Err(FrameError::TooBig);
            }
            out.reserve(out.len().clamp(64, limit - out.len()));
        }
        let (in_before, out_before) = (d.total_in() as usize, out.len());
        let status = d
            .decompress_vec(&deflated[in_before..], &mut out, FlushDecompress::Sync)
            .map_err(|e| FrameError::BadCompression(e.to_string()))?;
        if out.len() > limit {
            return Err(FrameError::TooBig);
        }
        let all_in = d.total_in() as usize >= deflated.len();
        let room_left = out.len() < out.capacity();
        if matches!(status, Status::StreamEnd) || (all_in && room_left) {
            return Ok(out);
        }
        if d.total_in() as usize == in_before && out.len() == out_before && room_left {
            return Err(FrameError::BadCompression("truncated".into()));
        }
    }
}

/// A compressor for the writers: one per writer thread, reset for every message (no
/// context takeover), so it serves any client.
pub struct Deflater {
    c: Compress,
}

impl Default for Deflater {
    fn default() -> Self {
        Deflater::new()
    }
}

impl Deflater {
    /// nats-server's level: best speed.
    pub fn new() -> Deflater {
        Deflater {
            c: Compress::new(Compression::fast(), false),
        }
    }

    /// Deflates the message made of `segments` into `out` (cleared first), without the
    /// `00 00 ff ff` tail of the final sync flush (RFC 7692, 7.2.1).
    pub fn deflate<'a>(&mut self, segments: impl Iterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
        self.c.reset();
        out.clear();
        for seg in segments {
            let mut rest = seg;
            while !rest.is_empty() {
                out.reserve(rest.len() / 2 + 64);
                let before = self.c.total_in();
                // Writing into a Vec with room cannot fail.
                let _ = self.c.compress_vec(rest, out, FlushCompress::None);
                let took = (self.c.total_in() - before) as usize;
                rest = &rest[took..];
            }
        }
        loop {
            out.reserve(64);
            let before = out.len();
            let _ = self.c.compress_vec(&[], out, FlushCompress::Sync);
            if out.len() == before || out.len() < out.capacity() {
                break;
            }
        }
        if out.ends_with(&[0x00, 0x00, 0xff, 0xff]) {
            out.truncate(out.len() - 4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_limit() {
        let msg: Vec<u8> = b"MSG foo 1 5\r\nhello\r\n".repeat(1000);
        let mut d = Deflater::new();
        let mut out = Vec::new();
        d.deflate(msg.chunks(333), &mut out);
        assert!(out.len() < msg.len() / 10, "{}", out.len());
        let mut back = out.clone();
        back.extend_from_slice(&[0, 0, 0xff, 0xff]);
        assert_eq!(inflate(&back, 1 << 20).unwrap(), msg);
        assert_eq!(inflate(&back, 1000), Err(FrameError::TooBig));
        // Each message stands alone: a second one inflates by itself too.
        d.deflate([&b"PONG\r\n"[..]].into_iter(), &mut out);
        out.extend_from_slice(&[0, 0, 0xff, 0xff]);
        assert_eq!(inflate(&out, 100).unwrap(), b"PONG\r\n");
        assert!(inflate(&[0xff, 0xff, 0xff, 0, 0, 0xff, 0xff], 100).is_err());
    }
}

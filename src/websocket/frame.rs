//! WebSocket frames (RFC 6455, section 5): reading a client's frames in place, and writing
//! the server's. The header codec is tungstenite's ([`FrameHeader`]); what is done with the
//! frames (which errors close, what a close frame is answered with) follows nats-server
//! 2.9.10 (`server/websocket.go`).

use crate::close::CloseReason;
use bytes::BytesMut;
use std::io::Cursor;
use tungstenite::protocol::frame::coding::{Control, Data, OpCode};
use tungstenite::protocol::frame::FrameHeader;

/// The largest payload of a control frame (RFC 6455, 5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 125;
/// The payload limit of the frames sent to a browser (a `User-Agent` starting with
/// `Mozilla/`): nats-server found browsers do better with frames of at most 4 KiB.
pub const BROWSER_FRAME: usize = 4096;

/// Close status codes (RFC 6455, 7.4.1) that beaver sends.
pub mod status {
    /// 1000: normal closure.
    pub const NORMAL: u16 = 1000;
    /// 1001: going away (server shutdown).
    pub const GOING_AWAY: u16 = 1001;
    /// 1002: protocol error.
    pub const PROTOCOL_ERROR: u16 = 1002;
    /// 1005: no status received (echoed as nats-server does for an empty close frame).
    pub const NO_STATUS: u16 = 1005;
    /// 1006: abnormal closure.
    pub const ABNORMAL: u16 = 1006;
    /// 1007: invalid payload data (a close body that is not UTF-8).
    pub const INVALID_PAYLOAD: u16 = 1007;
    /// 1008: policy violation (authentication, limits).
    pub const POLICY_VIOLATION: u16 = 1008;
    /// 1009: message too big.
    pub const TOO_BIG: u16 = 1009;
    /// 1011: internal server error.
    pub const INTERNAL_ERROR: u16 = 1011;
    /// 1015: TLS handshake failure.
    pub const TLS_HANDSHAKE: u16 = 1015;
}

/// Why a client's frames close its connection: with a close frame of status 1002 carrying
/// this text (nats-server queues the same one, but its close races with it, so it is sent
/// only now and then), and a line in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// A client frame without a mask (RFC 6455, 5.1: clients must mask).
    MaskMissing,
    /// A control frame with more than [`MAX_CONTROL_PAYLOAD`] bytes.
    ControlTooLong,
    /// A fragmented control frame.
    ControlNotFinal,
    /// A text or binary frame while a fragmented message is still open.
    NewMessageBeforeFinal,
    /// A continuation frame with no message open, or with the compression bit.
    InvalidContinuation,
    /// A reserved opcode.
    UnknownOpcode(u8),
    /// A compressed frame (RSV1) from a client that did not negotiate compression.
    Compressed,
    /// A header tungstenite refuses (a payload length over 2^63).
    BadHeader(String),
    /// A compressed message that inflates past the limit (closed with 1009).
    TooBig,
    /// A compressed message that does not inflate.
    BadCompression(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // nats-server's words, where it has them.
        match self {
            FrameError::MaskMissing => f.write_str("mask bit missing"),
            FrameError::ControlTooLong => write!(
                f,
                "control frame length bigger than maximum allowed of {MAX_CONTROL_PAYLOAD} bytes"
            ),
            FrameError::ControlNotFinal => f.write_str("control frame does not have final bit set"),
            FrameError::NewMessageBeforeFinal => f.write_str(
                "new message started before final frame for previous message was received",
            ),
            FrameError::InvalidContinuation => f.write_str("invalid continuation frame"),
            FrameError::UnknownOpcode(op) => write!(f, "unknown opcode {op}"),
            FrameError::Compressed => {
                f.write_str("compressed frame but compression was not negotiated")
            }
            FrameError::BadHeader(e) => write!(f, "invalid frame header: {e}"),
            FrameError::TooBig => f.write_str("compressed message too big"),
            FrameError::BadCompression(e) => write!(f, "error decompressing message: {e}"),
        }
    }
}

/// A control frame the client sent, for the reader to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlFrame {
    /// A ping: answer with a pong carrying `0`.
    Ping(Vec<u8>),
    /// A close: answer with a close frame carrying `0` (the client's status and body, or
    /// 1005, or 1007 for a body that is not UTF-8), then close the connection as
    /// `Client Closed`.
    Close(Vec<u8>),
}

/// Where the decoder is in the client's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Collecting a frame header (`need` bytes in all, as known so far).
    Header { need: usize },
    /// Inside the payload of a data frame.
    Data,
    /// Inside the payload of a control frame (collected in `control`).
    Control(Control),
}

/// Turns a client's frames into the NATS protocol bytes they carry, in place: the payload of
/// each data frame is unmasked and moved to the front of what was read, headers and control
/// frames are taken out. Frames may be cut anywhere by reads; a message may be fragmented
/// over several frames, with control frames between them (RFC 6455, 5.4). Nothing is
/// buffered but a header being read (at most 14 bytes) and a control frame's payload (at
/// most 125): a data frame of any size passes through, and the protocol parser applies its
/// own limits to what it carries. The exception is a compressed message
/// (`permessage-deflate`, RFC 7692, when negotiated: [`Decoder::with_compression`]): it is
/// collected whole, then inflated in its place, at most a limit of bytes.
///
/// ```
/// use beaver::websocket::{Decoder, ControlFrame};
/// use bytes::BytesMut;
/// // A masked binary frame carrying "PING\r\n" (mask 1,2,3,4), cut in two reads.
/// let mask = [1u8, 2, 3, 4];
/// let mut frame = vec![0x82, 0x80 | 6, 1, 2, 3, 4];
/// frame.extend(b"PING\r\n".iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
/// let mut d = Decoder::new();
/// let mut controls = Vec::new();
/// let mut buf = BytesMut::from(&frame[..4]);
/// d.decode(&mut buf, 0, &mut controls).unwrap();
/// assert!(buf.is_empty());
/// buf.extend_from_slice(&frame[4..]);
/// d.decode(&mut buf, 0, &mut controls).unwrap();
/// assert_eq!(&buf[..], b"PING\r\n");
/// assert!(controls.is_empty());
/// ```
#[derive(Debug)]
pub struct Decoder {
    at: At,
    header: [u8; 14],
    header_len: usize,
    /// Payload bytes left in the current frame.
    remaining: u64,
    mask: [u8; 4],
    /// Payload bytes of the current frame unmasked so far (the mask's phase).
    offset: usize,
    /// A fragmented data message is open (its final frame not seen).
    in_message: bool,
    control: Vec<u8>,
    /// A close frame was read: what follows it is ignored.
    closed: bool,
    /// Frames must be masked (clients must, unless they asked for `Nats-No-Masking`).
    mask_required: bool,
    /// `permessage-deflate` was negotiated: the most bytes one message may inflate to.
    inflate_limit: Option<usize>,
    /// The open message is compressed: its payload so far (unmasked, still deflated).
    compressed: Option<Vec<u8>>,
    /// The current frame is the open message's last.
    last_frame: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder at the start of a client's stream: frames must be masked.
    pub fn new() -> Decoder {
        Decoder::with_masking(true)
    }

    /// A decoder that accepts unmasked frames unless `mask_required` (nats-server's
    /// `Nats-No-Masking: true` request header, which its leafnodes send).
    pub fn with_masking(mask_required: bool) -> Decoder {
        Decoder {
            at: At::Header { need: 2 },
            header: [0; 14],
            header_len: 0,
            remaining: 0,
            mask: [0; 4],
            offset: 0,
            in_message: false,
            control: Vec::new(),
            closed: false,
            mask_required,
            inflate_limit: None,
            compressed: None,
            last_frame: false,
        }
    }

    /// Accepts compressed messages (`permessage-deflate` negotiated, without context
    /// takeover), each inflating to at most `limit` bytes (more closes the connection with
    /// [`FrameError::TooBig`]: a small message must not inflate into gigabytes).
    pub fn with_compression(mut self, limit: usize) -> Decoder {
        self.inflate_limit = Some(limit);
        self
    }

    /// Decodes `buf[from..]` (bytes just read) in place: afterwards `buf[from..]` holds the
    /// protocol bytes they carried (headers and control frames taken out, compressed
    /// messages inflated). Control frames completed in it are appended to `controls`, in
    /// order. After a close frame the rest is ignored. An error means the connection must
    /// close (see [`FrameError`]).
    pub fn decode(
        &mut self,
        buf: &mut BytesMut,
        from: usize,
        controls: &mut Vec<ControlFrame>,
    ) -> Result<(), FrameError> {
        let mut read = from;
        let mut written = from;
        while read < buf.len() && !self.closed {
            match self.at {
                At::Header { need } => {
                    let take = (need - self.header_len).min(buf.len() - read);
                    self.header[self.header_len..self.header_len + take]
                        .copy_from_slice(&buf[read..read + take]);
                    self.header_len += take;
                    read += take;
                    if self.header_len == 2 {
                        let extra = match self.header[1] & 0x7f {
                            126 => 2,
                            127 => 8,
                            _ => 0,
                        };
                        let masked = self.header[1] & 0x80 != 0;
                        let need = 2 + extra + if masked { 4 } else { 0 };
                        self.at = At::Header { need };
                        if need > 2 {
                            continue;
                        }
                    } else if self.header_len < need {
                        continue;
                    }
                    self.start_frame(controls)?;
                    if self.at == (At::Header { need: 2 }) && self.message_done() {
                        // An empty last frame of a compressed message.
                        self.inflate_into(buf, &mut read, &mut written)?;
                    }
                }
                At::Data => {
                    let n = usize::try_from(self.remaining)
                        .unwrap_or(usize::MAX)
                        .min(buf.len() - read);
                    if let Some(deflated) = self.compressed.as_mut() {
                        let start = deflated.len();
                        if start + n > self.inflate_limit.unwrap_or(0) {
                            return Err(FrameError::TooBig);
                        }
                        deflated.extend_from_slice(&buf[read..read + n]);
                        for (i, b) in deflated[start..].iter_mut().enumerate() {
                            *b ^= self.mask[(self.offset + i) % 4];
                        }
                    } else {
                        for i in 0..n {
                            buf[written + i] = buf[read + i] ^ self.mask[(self.offset + i) % 4];
                        }
                        written += n;
                    }
                    self.offset = (self.offset + n) % 4;
                    read += n;
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.next_header();
                        if self.message_done() {
                            self.inflate_into(buf, &mut read, &mut written)?;
                        }
                    }
                }
                At::Control(kind) => {
                    let n = (self.remaining as usize).min(buf.len() - read);
                    let start = self.control.len();
                    self.control.extend_from_slice(&buf[read..read + n]);
                    for (i, b) in self.control[start..].iter_mut().enumerate() {
                        *b ^= self.mask[(self.offset + i) % 4];
                    }
                    self.offset = (self.offset + n) % 4;
                    read += n;
                    self.remaining -= n as u64;
                    if self.remaining == 0 {
                        self.end_control(kind, controls);
                    }
                }
            }
        }
        buf.truncate(written);
        Ok(())
    }

    /// Whether a compressed message's last frame has just ended.
    fn message_done(&self) -> bool {
        self.compressed.is_some() && self.last_frame
    }

    /// Inflates the compressed message just completed into `buf` at `written`, before the
    /// bytes not decoded yet (from `read` on), and moves both positions past it.
    fn inflate_into(
        &mut self,
        buf: &mut BytesMut,
        read: &mut usize,
        written: &mut usize,
    ) -> Result<(), FrameError> {
        let Some(mut deflated) = self.compressed.take() else {
            return Ok(());
        };
        self.last_frame = false;
        // RFC 7692, 7.2.2: the sender removed the empty block's 4 last bytes.
        deflated.extend_from_slice(&[0x00, 0x00, 0xff, 0xff]);
        let limit = self.inflate_limit.unwrap_or(0);
        let inflated = super::deflate::inflate(&deflated, limit)?;
        let tail = buf.split_off(*read);
        buf.truncate(*written);
        buf.extend_from_slice(&inflated);
        *written += inflated.len();
        *read = *written;
        buf.extend_from_slice(&tail);
        Ok(())
    }

    /// A whole header is in `header`: check it as nats-server does and move on.
    fn start_frame(&mut self, controls: &mut Vec<ControlFrame>) -> Result<(), FrameError> {
        // Reserved opcodes first: tungstenite refuses them with words of its own.
        let op = self.header[0] & 0x0f;
        if matches!(op, 3..=7 | 11..=15) {
            return Err(FrameError::UnknownOpcode(op));
        }
        let mut cursor = Cursor::new(&self.header[..self.header_len]);
        let (head, len) = match FrameHeader::parse(&mut cursor) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return Err(FrameError::BadHeader("incomplete".into())),
            Err(e) => return Err(FrameError::BadHeader(e.to_string())),
        };
        self.mask = match head.mask {
            Some(mask) => mask,
            None if self.mask_required => return Err(FrameError::MaskMissing),
            None => [0; 4],
        };
        self.offset = 0;
        self.remaining = len;
        match head.opcode {
            OpCode::Control(kind @ (Control::Ping | Control::Pong | Control::Close)) => {
                if len > MAX_CONTROL_PAYLOAD as u64 {
                    return Err(FrameError::ControlTooLong);
                }
                if !head.is_final {
                    return Err(FrameError::ControlNotFinal);
                }
                self.control.clear();
                if len == 0 {
                    self.end_control(kind, controls);
                } else {
                    self.at = At::Control(kind);
                }
                return Ok(());
            }
            OpCode::Data(Data::Text | Data::Binary) => {
                if self.in_message {
                    return Err(FrameError::NewMessageBeforeFinal);
                }
                if head.rsv1 {
                    if self.inflate_limit.is_none() {
                        return Err(FrameError::Compressed);
                    }
                    self.compressed = Some(Vec::new());
                }
            }
            OpCode::Data(Data::Continue) => {
                if !self.in_message || head.rsv1 {
                    return Err(FrameError::InvalidContinuation);
                }
            }
            OpCode::Data(Data::Reserved(op)) | OpCode::Control(Control::Reserved(op)) => {
                return Err(FrameError::UnknownOpcode(op));
            }
        }
        self.in_message = !head.is_final;
        self.last_frame = head.is_final;
        if len == 0 {
            self.next_header();
        } else {
            self.at = At::Data;
        }
        Ok(())
    }

    fn end_control(&mut self, kind: Control, controls: &mut Vec<ControlFrame>) {
        let payload = std::mem::take(&mut self.control);
        match kind {
            Control::Ping => controls.push(ControlFrame::Ping(payload)),
            Control::Close => {
                controls.push(ControlFrame::Close(close_reply(&payload)));
                self.closed = true;
            }
            _ => {} // a pong: nothing to do
        }
        self.next_header();
    }

    fn next_header(&mut self) {
        self.at = At::Header { need: 2 };
        self.header_len = 0;
    }
}

/// The payload answering a client's close frame (nats-server's): its status and body; 1005
/// alone when it gave no status; 1007 and a reason when its body is not UTF-8.
fn close_reply(payload: &[u8]) -> Vec<u8> {
    if payload.len() < 2 {
        return close_payload(status::NO_STATUS, "");
    }
    let code = u16::from_be_bytes([payload[0], payload[1]]);
    match std::str::from_utf8(&payload[2..]) {
        Ok(body) => close_payload(code, body),
        Err(_) => close_payload(status::INVALID_PAYLOAD, "invalid utf8 body in close frame"),
    }
}

/// A close frame's payload: the status (big-endian), then `body`, cut to fit a control frame
/// with `...` at the end as nats-server does.
pub fn close_payload(code: u16, body: &str) -> Vec<u8> {
    let mut out = code.to_be_bytes().to_vec();
    if body.len() > MAX_CONTROL_PAYLOAD - 2 {
        let mut cut = MAX_CONTROL_PAYLOAD - 5;
        while !body.is_char_boundary(cut) {
            cut -= 1;
        }
        out.extend_from_slice(&body.as_bytes()[..cut]);
        out.extend_from_slice(b"...");
    } else {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// The close frame beaver sends when it closes a WebSocket client for `reason`: the status
/// nats-server maps the reason to (`wsEnqueueCloseMessage`), and the reason's name.
pub fn close_frame_for(reason: CloseReason) -> Vec<u8> {
    use CloseReason::*;
    let code = match reason {
        ClientClosed => status::NORMAL,
        AuthenticationTimeout
        | AuthenticationViolation
        | SlowConsumerPendingBytes
        | SlowConsumerWriteDeadline
        | MaxConnectionsExceeded
        | MaxControlLineExceeded
        | AuthenticationExpired
        | MaxAccountConnectionsExceeded
        | MaxSubscriptionsExceeded => status::POLICY_VIOLATION,
        TlsHandshakeError => status::TLS_HANDSHAKE,
        ParseError | ProtocolViolation | BadClientProtocolVersion => status::PROTOCOL_ERROR,
        MaxPayloadExceeded => status::TOO_BIG,
        ServerShutdown => status::GOING_AWAY,
        WriteError | ReadError | StaleConnection => status::ABNORMAL,
        _ => status::INTERNAL_ERROR,
    };
    control_frame(Control::Close, &close_payload(code, reason.as_str()))
}

/// A whole unmasked control frame (server to client) carrying `payload` (at most
/// [`MAX_CONTROL_PAYLOAD`] bytes).
pub fn control_frame(kind: Control, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + payload.len());
    // Writing into a Vec cannot fail.
    let _ = write_header(&mut out, OpCode::Control(kind), payload.len());
    out.extend_from_slice(payload);
    out
}

/// A pong answering a ping that carried `payload`.
pub fn pong(payload: &[u8]) -> Vec<u8> {
    control_frame(Control::Pong, payload)
}

/// A close frame carrying `payload` (see [`close_payload`]).
pub fn close(payload: &[u8]) -> Vec<u8> {
    control_frame(Control::Close, payload)
}

/// Writes the header of a final, unmasked frame of `len` payload bytes (server frames are
/// never masked: RFC 6455, 5.1).
fn write_header(out: &mut impl std::io::Write, opcode: OpCode, len: usize) -> std::io::Result<()> {
    let head = FrameHeader {
        is_final: true,
        rsv1: false,
        rsv2: false,
        rsv3: false,
        opcode,
        mask: None,
    };
    head.format(len as u64, out)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// Writes `payload` as one compressed message (RSV1 on its first frame, RFC 7692, 6): one
/// frame, or fragments of at most `max_frame` bytes (0: no limit), the first binary, the
/// others continuations, the last final.
pub fn write_compressed(out: &mut impl std::io::Write, payload: &[u8], max_frame: usize) {
    let max = if max_frame == 0 {
        usize::MAX
    } else {
        max_frame
    };
    let mut rest = payload;
    let mut first = true;
    loop {
        let n = rest.len().min(max);
        let head = FrameHeader {
            is_final: n == rest.len(),
            rsv1: first,
            rsv2: false,
            rsv3: false,
            opcode: OpCode::Data(if first { Data::Binary } else { Data::Continue }),
            mask: None,
        };
        // Cannot fail: `out` is a Vec or a TLS session's unlimited buffer.
        let _ = head.format(n as u64, out);
        let _ = out.write_all(&rest[..n]);
        rest = &rest[n..];
        first = false;
        if rest.is_empty() {
            return;
        }
    }
}

/// Frames the server's protocol bytes as binary frames of at most `max_frame` payload bytes
/// each (0: no limit), writing headers and payload to `out` as they go. Used by the writer
/// for a gather of batches: call [`Framer::segment`] for each piece in order, knowing the
/// total in advance.
pub struct Framer {
    /// Bytes left in the current frame.
    left_in_frame: usize,
    /// Bytes left in the whole gather.
    left: usize,
    max_frame: usize,
}

impl Framer {
    /// Frames `total` bytes, in frames of at most `max_frame` (0: one frame).
    pub fn new(total: usize, max_frame: usize) -> Framer {
        Framer {
            left_in_frame: 0,
            left: total,
            max_frame: if max_frame == 0 {
                usize::MAX
            } else {
                max_frame
            },
        }
    }

    /// Writes the next `seg` of the bytes announced, with headers where frames start.
    pub fn segment(
        &mut self,
        mut seg: &[u8],
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        while !seg.is_empty() {
            if self.left_in_frame == 0 {
                self.left_in_frame = self.left.min(self.max_frame);
                write_header(out, OpCode::Data(Data::Binary), self.left_in_frame)?;
            }
            let n = seg.len().min(self.left_in_frame);
            out.write_all(&seg[..n])?;
            seg = &seg[n..];
            self.left_in_frame -= n;
            self.left -= n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(b0: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
        let mut f = vec![b0];
        let n = payload.len();
        if n < 126 {
            f.push(0x80 | n as u8);
        } else if n < 65536 {
            f.push(0x80 | 126);
            f.extend((n as u16).to_be_bytes());
        } else {
            f.push(0x80 | 127);
            f.extend((n as u64).to_be_bytes());
        }
        f.extend(mask);
        f.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        f
    }

    /// Decodes `stream` cut into pieces of `chunk` bytes, each appended to a buffer that
    /// holds what was decoded before (as the reader's read buffer does).
    fn decode_with(
        mut d: Decoder,
        stream: &[u8],
        chunk: usize,
    ) -> (Result<Vec<u8>, FrameError>, Vec<ControlFrame>) {
        let mut buf = BytesMut::from(&b"before:"[..]);
        let mut controls = Vec::new();
        for piece in stream.chunks(chunk) {
            let from = buf.len();
            buf.extend_from_slice(piece);
            if let Err(e) = d.decode(&mut buf, from, &mut controls) {
                return (Err(e), controls);
            }
        }
        assert!(buf.starts_with(b"before:"));
        (Ok(buf[7..].to_vec()), controls)
    }

    fn decode_in(stream: &[u8], chunk: usize) -> (Result<Vec<u8>, FrameError>, Vec<ControlFrame>) {
        decode_with(Decoder::new(), stream, chunk)
    }

    /// Compressed messages (RFC 7692), fragmented, between plain ones, cut anywhere.
    #[test]
    fn compressed_messages_inflate_in_place() {
        let text = b"PUB a 5\r\nhello\r\n".repeat(200);
        let mut d = crate::websocket::Deflater::new();
        let mut deflated = Vec::new();
        d.deflate([&text[..]].into_iter(), &mut deflated);
        let (one, two) = deflated.split_at(deflated.len() / 2);
        let mut stream = masked(0x82, b"PING\r\n", [1, 2, 3, 4]);
        stream.extend(masked(0x42, one, [5, 6, 7, 8])); // first fragment, RSV1
        stream.extend(masked(0x89, b"p", [1; 4])); // a ping between
        stream.extend(masked(0x80, two, [9, 9, 9, 9])); // last fragment
        stream.extend(masked(0x82, b"PONG\r\n", [3; 4]));
        let mut want = b"PING\r\n".to_vec();
        want.extend(&text);
        want.extend(b"PONG\r\n");
        for chunk in [1, 3, 64, stream.len()] {
            let (out, controls) =
                decode_with(Decoder::new().with_compression(1 << 20), &stream, chunk);
            assert_eq!(out.unwrap(), want, "cut every {chunk}");
            assert_eq!(controls, vec![ControlFrame::Ping(b"p".to_vec())]);
        }
        // Over the limit: refused, however small the message on the wire.
        let (out, _) = decode_with(Decoder::new().with_compression(1000), &stream, 64);
        assert_eq!(out, Err(FrameError::TooBig));
        // Not negotiated: refused.
        assert_eq!(decode_in(&stream, 64).0, Err(FrameError::Compressed));
    }

    #[test]
    fn fragments_controls_and_any_cut() {
        let big = vec![b'x'; 70_000];
        let mut stream = masked(0x02, b"PUB a 2\r\nhi", [9, 8, 7, 6]); // not final
        stream.extend(masked(0x89, b"ping!", [1, 1, 1, 1]));
        stream.extend(masked(0x80, b"\r\n", [5, 5, 5, 5]));
        stream.extend(masked(0x81, &big, [1, 2, 3, 4])); // text, 64-bit length
        stream.extend(masked(0x8a, b"", [0, 0, 0, 0])); // pong: ignored
        stream.extend(masked(0x82, b"", [0, 0, 0, 0])); // empty binary
        stream.extend(masked(0x88, &[0x03, 0xe8, b'o', b'k'], [3, 3, 3, 3]));
        stream.extend(masked(0x82, b"after close", [3, 3, 3, 3]));
        let mut want = b"PUB a 2\r\nhi\r\n".to_vec();
        want.extend(&big);
        for chunk in [1, 2, 3, 7, 13, 100, 4096, stream.len()] {
            let (out, controls) = decode_in(&stream, chunk);
            assert_eq!(out.unwrap(), want, "cut every {chunk}");
            assert_eq!(
                controls,
                vec![
                    ControlFrame::Ping(b"ping!".to_vec()),
                    ControlFrame::Close(vec![0x03, 0xe8, b'o', b'k'])
                ]
            );
        }
    }

    #[test]
    fn errors_as_nats_server() {
        let cases: Vec<(Vec<u8>, FrameError)> = vec![
            (vec![0x82, 0x01, b'x'], FrameError::MaskMissing),
            (masked(0x89, &[0; 126], [1; 4]), FrameError::ControlTooLong),
            (masked(0x09, b"x", [1; 4]), FrameError::ControlNotFinal),
            (masked(0x83, b"x", [1; 4]), FrameError::UnknownOpcode(3)),
            (masked(0x8b, b"x", [1; 4]), FrameError::UnknownOpcode(11)),
            (masked(0xc2, b"x", [1; 4]), FrameError::Compressed),
            (masked(0x80, b"x", [1; 4]), FrameError::InvalidContinuation),
            (
                [masked(0x02, b"x", [1; 4]), masked(0x82, b"y", [1; 4])].concat(),
                FrameError::NewMessageBeforeFinal,
            ),
        ];
        for (stream, want) in cases {
            assert_eq!(decode_in(&stream, 1).0, Err(want.clone()));
            assert_eq!(decode_in(&stream, 64).0, Err(want));
        }
        // RSV2 and RSV3 are ignored, as by nats-server.
        assert_eq!(
            decode_in(&masked(0xa2, b"ok", [1; 4]), 64).0.unwrap(),
            b"ok"
        );
    }

    #[test]
    fn close_replies_as_nats_server() {
        assert_eq!(close_reply(b""), vec![0x03, 0xed]);
        assert_eq!(close_reply(&[0x03, 0xe8]), vec![0x03, 0xe8]);
        let mut bad = close_reply(&[0x03, 0xe8, 0xff, 0xfe]);
        assert_eq!(bad.drain(..2).collect::<Vec<_>>(), vec![0x03, 0xef]);
        assert_eq!(bad, b"invalid utf8 body in close frame");
        let long = "é".repeat(100);
        let p = close_payload(1000, &long);
        assert!(p.len() <= MAX_CONTROL_PAYLOAD && p.ends_with(b"..."));
        assert_eq!(
            close_frame_for(CloseReason::ProtocolViolation),
            b"\x88\x14\x03\xeaProtocol Violation"
        );
    }

    #[test]
    fn framer_splits_at_the_limit() {
        let data: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let mut out = Vec::new();
        let mut f = Framer::new(data.len(), BROWSER_FRAME);
        for piece in data.chunks(3000) {
            f.segment(piece, &mut out).unwrap();
        }
        // 4096 + 4096 + 1808, each with a 4-byte header (126 + 16-bit length).
        assert_eq!(out.len(), data.len() + 3 * 4);
        assert_eq!(&out[..4], &[0x82, 126, 0x10, 0x00]);
        assert_eq!(&out[4 + 4096..8 + 4096], &[0x82, 126, 0x10, 0x00]);
        assert_eq!(&out[8 + 8192..12 + 8192], &[0x82, 126, 0x07, 0x10]);
        let mut one = Vec::new();
        Framer::new(5, 0).segment(b"hello", &mut one).unwrap();
        assert_eq!(one, b"\x82\x05hello");
    }
}

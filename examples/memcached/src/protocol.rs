//! The memcached binary protocol (the frame the Couchbase KV protocol extends): a 24-byte
//! header, then extras, key and value.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Request magic.
pub const REQUEST: u8 = 0x80;
/// Response magic.
pub const RESPONSE: u8 = 0x81;
/// Header length.
pub const HEADER_LEN: usize = 24;

/// The opcodes this client uses.
pub mod opcode {
    /// GET.
    pub const GET: u8 = 0x00;
    /// SET.
    pub const SET: u8 = 0x01;
    /// INCREMENT.
    pub const INCREMENT: u8 = 0x05;
}

/// Response statuses this client names.
pub mod status {
    /// Success.
    pub const SUCCESS: u16 = 0x0000;
    /// Key not found.
    pub const KEY_NOT_FOUND: u16 = 0x0001;
    /// Temporary failure (TMPFAIL): the server could not take the request now.
    pub const TEMPORARY_FAILURE: u16 = 0x0086;
}

/// One frame, request or response. `status` is the vbucket field in a request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    /// REQUEST or RESPONSE.
    pub magic: u8,
    /// The command.
    pub opcode: u8,
    /// The response status (vbucket id in a request).
    pub status: u16,
    /// Echoed by the server.
    pub opaque: u32,
    /// Compare-and-swap value.
    pub cas: u64,
    /// Command-specific fixed fields.
    pub extras: Vec<u8>,
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
}

/// A malformed frame.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The connection failed or closed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Not a frame of this protocol.
    #[error("bad frame: {0}")]
    Malformed(String),
}

impl Frame {
    /// A request for `opcode`.
    pub fn request(opcode: u8, opaque: u32, extras: Vec<u8>, key: &[u8], value: &[u8]) -> Self {
        Frame {
            magic: REQUEST,
            opcode,
            opaque,
            extras,
            key: key.to_vec(),
            value: value.to_vec(),
            ..Frame::default()
        }
    }

    /// The response to `request` with `status` and no body.
    pub fn status_response(request: &Frame, status: u16) -> Self {
        Frame {
            magic: RESPONSE,
            opcode: request.opcode,
            status,
            opaque: request.opaque,
            ..Frame::default()
        }
    }

    /// The frame on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let body = self.extras.len() + self.key.len() + self.value.len();
        let mut out = Vec::with_capacity(HEADER_LEN + body);
        out.push(self.magic);
        out.push(self.opcode);
        out.extend_from_slice(&(self.key.len() as u16).to_be_bytes());
        out.push(self.extras.len() as u8);
        out.push(0); // data type: raw bytes
        out.extend_from_slice(&self.status.to_be_bytes());
        out.extend_from_slice(&(body as u32).to_be_bytes());
        out.extend_from_slice(&self.opaque.to_be_bytes());
        out.extend_from_slice(&self.cas.to_be_bytes());
        out.extend_from_slice(&self.extras);
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.value);
        out
    }

    /// Reads one frame from `reader`.
    pub async fn read(reader: &mut (impl AsyncRead + Unpin)) -> Result<Self, FrameError> {
        let mut header = [0u8; HEADER_LEN];
        reader.read_exact(&mut header).await?;
        let magic = header[0];
        if magic != REQUEST && magic != RESPONSE {
            return Err(FrameError::Malformed(format!("magic {magic:#04x}")));
        }
        let key_len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let extras_len = usize::from(header[4]);
        let body_len = u32::from_be_bytes([header[8], header[9], header[10], header[11]]) as usize;
        if key_len + extras_len > body_len || body_len > 20 << 20 {
            return Err(FrameError::Malformed(format!(
                "key {key_len} + extras {extras_len} in a body of {body_len} bytes"
            )));
        }
        let mut body = vec![0u8; body_len];
        reader.read_exact(&mut body).await?;
        let value = body.split_off(extras_len + key_len);
        let key = body.split_off(extras_len);
        Ok(Frame {
            magic,
            opcode: header[1],
            status: u16::from_be_bytes([header[6], header[7]]),
            opaque: u32::from_be_bytes([header[12], header[13], header[14], header[15]]),
            cas: u64::from_be_bytes(header[16..24].try_into().expect("8 bytes")),
            extras: body,
            key,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_frame_reads_back_as_written() {
        let frame = Frame::request(opcode::INCREMENT, 7, vec![1; 20], b"counter", b"");
        let bytes = frame.encode();
        assert_eq!(bytes.len(), HEADER_LEN + 20 + 7);
        let read = Frame::read(&mut bytes.as_slice()).await.unwrap();
        assert_eq!(read, frame);
    }

    #[tokio::test]
    async fn a_body_shorter_than_its_key_is_refused() {
        let mut bytes = Frame::request(opcode::GET, 1, vec![], b"key", b"").encode();
        bytes[11] = 1; // body length 1 < key length 3
        assert!(matches!(
            Frame::read(&mut bytes.as_slice()).await,
            Err(FrameError::Malformed(_))
        ));
    }
}

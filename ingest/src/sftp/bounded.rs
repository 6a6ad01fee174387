//! A bound on SFTP packet lengths that ends the session. russh-sftp refuses a packet longer than
//! its limit but then goes on reading from the middle of it; this reader follows the packet
//! framing itself and ends the stream instead, so a client that announces a huge packet is
//! disconnected rather than buffered for or misread.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub struct Bounded<S> {
    inner: S,
    max: u32,
    header: [u8; 4],
    header_len: usize,
    /// Bytes of the current packet's body still to come.
    remaining: u64,
}

impl<S> Bounded<S> {
    pub fn new(inner: S, max: u32) -> Self {
        Bounded {
            inner,
            max,
            header: [0; 4],
            header_len: 0,
            remaining: 0,
        }
    }

    /// Follows the framing through `bytes`; an error when a packet is too long.
    fn follow(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            if self.remaining > 0 {
                let skip = self.remaining.min(bytes.len() as u64) as usize;
                self.remaining -= skip as u64;
                bytes = &bytes[skip..];
                continue;
            }
            self.header[self.header_len] = bytes[0];
            self.header_len += 1;
            bytes = &bytes[1..];
            if self.header_len == 4 {
                self.header_len = 0;
                let length = u32::from_be_bytes(self.header);
                if length > self.max {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "an SFTP packet of {length} bytes (the limit is {})",
                            self.max
                        ),
                    ));
                }
                self.remaining = u64::from(length);
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let followed = self.follow(&buf.filled()[before..]);
        if let Err(err) = followed {
            tracing::warn!(%err, "SFTP session ended");
            buf.set_filled(before);
            return Poll::Ready(Err(err));
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn packet(length: u32, body: usize) -> Vec<u8> {
        let mut bytes = length.to_be_bytes().to_vec();
        bytes.extend(std::iter::repeat_n(7u8, body));
        bytes
    }

    #[tokio::test]
    async fn packets_within_the_limit_pass_and_a_longer_one_ends_the_stream() {
        let mut stream = packet(8, 8);
        stream.extend(packet(16, 16));
        let mut ok = Bounded::new(stream.as_slice(), 16);
        let mut all = Vec::new();
        ok.read_to_end(&mut all).await.unwrap();
        assert_eq!(all, stream);

        let mut stream = packet(8, 8);
        stream.extend(packet(1 << 30, 100));
        let mut too_long = Bounded::new(stream.as_slice(), 16);
        let err = too_long.read_to_end(&mut Vec::new()).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}

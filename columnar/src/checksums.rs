//! Page checksums: a Parquet writer may store a CRC-32 of each page's bytes in the page's header
//! (pyarrow's `write_page_checksum=True`, parquet-mr's `parquet.page.write-checksum.enabled`).
//! The Parquet library reads pages without checking it, so a file damaged in the middle (its
//! footer intact) would be read as good: here every page of every column chunk is checked
//! before a row is read, and a mismatch refuses the file. A chunk whose first page has no
//! checksum was written without them and is skipped, at the cost of reading that one header.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use polars_parquet_format::PageHeader;
use polars_parquet_format::thrift::protocol::TCompactInputProtocol;

/// A page header is at most this large (as the Parquet library bounds it).
const MAX_HEADER: usize = 16 << 20;

/// Checks the checksums of the column chunks at `chunks` (byte ranges of the file at `path`);
/// `Err` names the first chunk and page that do not match, or why a chunk cannot be walked.
pub fn verify(path: &Path, chunks: impl Iterator<Item = Range<u64>>) -> Result<(), String> {
    let file = File::open(path).map_err(|e| format!("the file cannot be read: {e}"))?;
    let mut reader = BufReader::with_capacity(256 << 10, file);
    for (chunk, range) in chunks.enumerate() {
        verify_chunk(&mut reader, range.clone())
            .map_err(|e| format!("column chunk {chunk} (bytes {range:?}): {e}"))?;
    }
    Ok(())
}

fn verify_chunk(reader: &mut BufReader<File>, range: Range<u64>) -> Result<(), String> {
    reader
        .seek(SeekFrom::Start(range.start))
        .map_err(|e| e.to_string())?;
    let mut at = range.start;
    let mut page = 0;
    while at < range.end {
        let mut counted = Counted {
            inner: &mut *reader,
            read: 0,
        };
        let header = {
            let mut protocol = TCompactInputProtocol::new(&mut counted, MAX_HEADER);
            PageHeader::read_from_in_protocol(&mut protocol)
                .map_err(|e| format!("page {page} has no readable header ({e})"))?
        };
        at += counted.read;
        let size = u64::try_from(header.compressed_page_size)
            .map_err(|_| format!("page {page} has a negative size"))?;
        if at + size > range.end {
            return Err(format!("page {page} runs past its column chunk"));
        }
        let Some(expected) = header.crc else {
            // Written without checksums.
            return Ok(());
        };
        let mut hasher = crc32fast::Hasher::new();
        let mut left = size;
        let mut buffer = [0u8; 64 << 10];
        while left > 0 {
            let n = left.min(buffer.len() as u64) as usize;
            reader
                .read_exact(&mut buffer[..n])
                .map_err(|e| format!("page {page} cannot be read ({e})"))?;
            hasher.update(&buffer[..n]);
            left -= n as u64;
        }
        if hasher.finalize() as i32 != expected {
            return Err(format!("page {page}'s checksum does not match its bytes"));
        }
        at += size;
        page += 1;
    }
    Ok(())
}

/// Counts the bytes read through it (a page header's length).
struct Counted<'a, R> {
    inner: &'a mut R,
    read: u64,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

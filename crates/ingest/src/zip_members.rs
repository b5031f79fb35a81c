//! Zip archives (a CI system's log download, an issue's attachment): each
//! member is an input of its own, read from the archive without unpacking
//! it. The `zip` crate reads the archive's directory; a member's bytes are
//! read from where its directory entry says they start, stored or through
//! a deflate decoder, under the same expansion limit as compressed files.

use crate::limits::{Capped, Counted, CORE_EXPANSION};
use crate::open::Compression;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use zip::CompressionMethod;

/// Most members of one archive taken as inputs; the rest are counted in
/// an error.
pub(crate) const MAX_MEMBERS: usize = 10_000;

/// Most entries an archive's directory may hold, and most bytes it may
/// take: the directory is read whole before any member, so these bound
/// what reading it costs.
const MAX_ENTRIES: u64 = 100_000;
const MAX_DIRECTORY: u64 = 64 << 20;

/// The end of an archive's directory lies in its last 22 bytes plus a
/// comment of at most 64 KiB.
const END_SEARCH: u64 = 22 + 0xFFFF;

/// One member of a zip archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZipMember {
    /// The archive's path.
    pub archive: PathBuf,
    /// The member's path inside the archive.
    pub name: String,
    /// Where its bytes start in the archive.
    offset: u64,
    /// How many bytes it takes there.
    packed: u64,
    /// Deflated (else stored).
    deflated: bool,
}

/// What listing an archive found.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub(crate) members: Vec<ZipMember>,
    /// Members passed over, with the reason.
    pub(crate) skipped: Vec<(String, String)>,
    /// Members left out past [`MAX_MEMBERS`].
    pub(crate) left_out: usize,
}

/// Whether `path` names a zip archive by its extension (`.zip`).
pub(crate) fn is_zip_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

/// Whether the file at `path` starts as a zip archive does (a local
/// header, or the end of an empty archive's directory).
pub(crate) fn has_zip_magic(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06")
}

/// A little-endian number of up to 8 bytes.
fn le(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x))
}

/// Reads the end of the archive's directory from the file's last bytes
/// (the zip64 record where it points to one) and refuses a directory too
/// large to read, or an end that is missing or points past itself: the
/// `zip` crate would otherwise search the whole file for it, or read
/// millions of entries into memory.
fn check_directory(file: &mut File) -> Result<(), String> {
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let start = len.saturating_sub(END_SEARCH);
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(start))
        .and_then(|_| file.take(END_SEARCH).read_to_end(&mut tail))
        .map_err(|e| e.to_string())?;
    // The last whole end record (22 bytes) in the tail.
    let at = tail
        .windows(22)
        .rposition(|w| w.starts_with(b"PK\x05\x06"))
        .ok_or("not a zip archive: no end of its directory in its last 64 KiB")?;
    let field = |from: usize, n: usize| tail.get(at + from..at + from + n).map_or(0, le);
    let (mut entries, mut size, mut offset) = (field(10, 2), field(12, 4), field(16, 4));
    let end = start + at as u64;
    if entries == 0xFFFF || size == 0xFFFF_FFFF || offset == 0xFFFF_FFFF {
        // The zip64 locator, just before the end record, gives the zip64
        // end record's place.
        let locator = at.checked_sub(20).and_then(|l| tail.get(l..l + 20));
        let record_at = match locator {
            Some(l) if l.get(..4) == Some(b"PK\x06\x07".as_slice()) => l.get(8..16).map_or(0, le),
            _ => return Err("not a zip archive: a zip64 end without its locator".to_owned()),
        };
        let mut record = [0u8; 56];
        file.seek(SeekFrom::Start(record_at))
            .and_then(|_| file.read_exact(&mut record))
            .map_err(|e| format!("not a zip archive: its zip64 end record: {e}"))?;
        if record.get(..4) != Some(b"PK\x06\x06".as_slice()) {
            return Err(
                "not a zip archive: no zip64 end record where its locator points".to_owned(),
            );
        }
        entries = record.get(32..40).map_or(u64::MAX, le);
        size = record.get(40..48).map_or(u64::MAX, le);
        offset = record.get(48..56).map_or(u64::MAX, le);
    }
    if entries > MAX_ENTRIES || size > MAX_DIRECTORY {
        return Err(format!(
            "its directory holds {entries} entries in {size} bytes, more than the {MAX_ENTRIES} \
             entries and {} MiB read; unpack it and name the files",
            MAX_DIRECTORY >> 20
        ));
    }
    if offset.saturating_add(size) > end {
        return Err("not a zip archive: its directory would end past the end of it".to_owned());
    }
    // Its first entry must be where the end says the directory starts.
    let mut first = [0u8; 4];
    let starts = file
        .seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut first))
        .is_ok_and(|()| first == *b"PK\x01\x02");
    if entries > 0 && !starts {
        return Err("not a zip archive: no directory where its end says it starts".to_owned());
    }
    Ok(())
}

/// Lists the members of the archive at `path` that can be read: files
/// stored or deflated, not encrypted.
pub(crate) fn list(path: &Path) -> Result<Listing, String> {
    let mut file = File::open(path).map_err(|e| e.to_string())?;
    check_directory(&mut file)?;
    file.seek(SeekFrom::Start(0)).map_err(|e| e.to_string())?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("not a zip archive: {e}"))?;
    let mut listing = Listing::default();
    for i in 0..archive.len() {
        if listing.members.len() >= MAX_MEMBERS {
            listing.left_out += 1;
            continue;
        }
        let member = match archive.by_index_raw(i) {
            Ok(member) => member,
            Err(e) => {
                listing
                    .skipped
                    .push((format!("member {i}"), format!("unreadable entry: {e}")));
                continue;
            }
        };
        if member.is_dir() {
            continue;
        }
        let name = member.name().to_owned();
        // Without the crate's own decoders, deflate is its `DEFLATE`.
        let deflated = match member.compression() {
            CompressionMethod::Stored => false,
            method if method == CompressionMethod::DEFLATE => true,
            other => {
                listing
                    .skipped
                    .push((name, format!("compressed with {other}, which is not read")));
                continue;
            }
        };
        if member.encrypted() {
            listing.skipped.push((name, "encrypted".to_owned()));
            continue;
        }
        let Some(offset) = member.data_start() else {
            listing
                .skipped
                .push((name, "its data's place is unknown".to_owned()));
            continue;
        };
        listing.members.push(ZipMember {
            archive: path.to_path_buf(),
            name,
            offset,
            packed: member.compressed_size(),
            deflated,
        });
    }
    // Members whose bytes overlap are how a zip bomb multiplies one
    // deflated stream; apart, no member can expand more than a compressed
    // file of its size.
    let mut spans: Vec<(u64, u64)> = listing
        .members
        .iter()
        .map(|m| (m.offset, m.offset.saturating_add(m.packed)))
        .collect();
    spans.sort_unstable();
    if spans
        .windows(2)
        .any(|w| matches!(w, [(_, end), (start, _)] if end > start))
    {
        return Err("its members' bytes overlap, as in a zip bomb; not read".to_owned());
    }
    Ok(listing)
}

/// The bytes of `member`, decompressed; a deflated member's output is
/// capped as a compressed core's is ([`CORE_EXPANSION`]).
pub(crate) fn open_member(member: &ZipMember) -> io::Result<Box<dyn Read + Send>> {
    let mut file = crate::open::open_regular(&member.archive)?;
    file.seek(SeekFrom::Start(member.offset))?;
    let raw = file.take(member.packed);
    if !member.deflated {
        return Ok(Box::new(raw));
    }
    let packed = Arc::new(AtomicU64::new(0));
    let counted = Counted {
        inner: raw,
        count: Arc::clone(&packed),
    };
    // Deflate cannot expand past about 1032:1, so the cap is that of a
    // core (a member may be one), which it never reaches for text.
    let mut inflated = Capped::new(
        flate2::read::DeflateDecoder::new(counted),
        packed,
        Arc::new(Mutex::new(CORE_EXPANSION)),
    );
    // A compressed file deflated again would be decompressed twice, past
    // any limit of one layer: it is not read.
    let mut head = [0u8; 6];
    let mut got = 0;
    while got < head.len() {
        match inflated.read(head.get_mut(got..).unwrap_or_default())? {
            0 => break,
            n => got += n,
        }
    }
    let head = head.get(..got).unwrap_or_default().to_vec();
    if let Some(compression) = Compression::sniff(&head) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "a {} file deflated again inside the archive; not read (store it in the \
                 archive, or unpack it and name the file)",
                compression.as_str()
            ),
        ));
    }
    Ok(Box::new(io::Cursor::new(head).chain(inflated)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A zip archive of `members` (name, bytes, deflated), written by hand
    /// in the format's simplest form: local headers, then the directory.
    pub(crate) fn zip_of(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut directory = Vec::new();
        for (name, bytes, deflate) in members {
            let data = if *deflate {
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
                e.finish().unwrap_or_else(|e| panic!("{e}"))
            } else {
                bytes.to_vec()
            };
            let crc = crc32(bytes);
            let method: u16 = if *deflate { 8 } else { 0 };
            let offset = out.len() as u32;
            let fields = |sig: u32, central: bool| {
                let mut h = Vec::new();
                h.extend_from_slice(&sig.to_le_bytes());
                if central {
                    h.extend_from_slice(&20u16.to_le_bytes());
                }
                h.extend_from_slice(&20u16.to_le_bytes());
                h.extend_from_slice(&0u16.to_le_bytes());
                h.extend_from_slice(&method.to_le_bytes());
                h.extend_from_slice(&[0, 0, 0x21, 0]);
                h.extend_from_slice(&crc.to_le_bytes());
                h.extend_from_slice(&(data.len() as u32).to_le_bytes());
                h.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                h.extend_from_slice(&(name.len() as u16).to_le_bytes());
                h.extend_from_slice(&0u16.to_le_bytes());
                if central {
                    // Comment length, disk, internal and external attributes.
                    h.extend_from_slice(&[0; 10]);
                    h.extend_from_slice(&offset.to_le_bytes());
                }
                h.extend_from_slice(name.as_bytes());
                h
            };
            out.extend(fields(0x0403_4b50, false));
            out.extend_from_slice(&data);
            directory.extend(fields(0x0201_4b50, true));
        }
        let at = out.len() as u32;
        out.extend_from_slice(&directory);
        out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(directory.len() as u32).to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    fn written(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("coroner-zip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{e}"));
        path
    }

    fn text_of(member: &ZipMember) -> String {
        let mut out = String::new();
        open_member(member)
            .unwrap_or_else(|e| panic!("{e}"))
            .read_to_string(&mut out)
            .unwrap_or_else(|e| panic!("{e}"));
        out
    }

    #[test]
    fn stored_and_deflated_members_read_as_they_were_written() {
        let log = b"step 1\nRuntimeError: CUDA error: out of memory\n".repeat(50);
        let path = written(
            "both.zip",
            &zip_of(&[
                ("logs/rank0.txt", &log, true),
                ("logs/", b"", false),
                ("logs/rank1.txt", b"plain\n", false),
            ]),
        );
        let listing = list(&path).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = listing.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["logs/rank0.txt", "logs/rank1.txt"]);
        assert_eq!(text_of(&listing.members[0]).as_bytes(), log.as_slice());
        assert_eq!(text_of(&listing.members[1]), "plain\n");
    }

    #[test]
    fn a_file_that_is_no_archive_is_an_error_and_a_cut_one_never_panics() {
        assert!(list(&written("text.zip", b"just a log\n")).is_err());
        let whole = zip_of(&[("a.log", b"text\n", true)]);
        for cut in 0..whole.len() {
            let path = written("cut.zip", &whole[..cut]);
            if let Ok(listing) = list(&path) {
                for member in &listing.members {
                    let mut out = Vec::new();
                    if let Ok(mut r) = open_member(member) {
                        let _ = r.read_to_end(&mut out);
                    }
                }
            }
        }
    }

    #[test]
    fn members_that_share_their_bytes_are_refused() {
        let mut bytes = zip_of(&[("a.log", b"aaaa\n", true), ("b.log", b"aaaa\n", true)]);
        // Point the second directory entry at the first member's bytes.
        let second = bytes
            .windows(4)
            .enumerate()
            .filter(|(_, w)| *w == 0x0201_4b50u32.to_le_bytes())
            .map(|(i, _)| i)
            .nth(1)
            .unwrap_or_else(|| panic!("two entries"));
        bytes[second + 42..second + 46].copy_from_slice(&0u32.to_le_bytes());
        let err = list(&written("overlap.zip", &bytes))
            .err()
            .unwrap_or_else(|| panic!("not refused"));
        assert!(err.contains("overlap"), "{err}");
    }

    #[test]
    fn a_directory_too_large_or_an_end_that_leads_nowhere_is_refused_at_once() {
        // Many ends of a directory and no directory: the search for a valid
        // one must not walk the whole file.
        let mut fake = b"PK\x03\x04".to_vec();
        fake.extend(b"PK\x05\x06".repeat(1 << 18));
        let started = std::time::Instant::now();
        assert!(list(&written("ends.zip", &fake)).is_err());
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // A directory said to take 100 MiB.
        let mut big = zip_of(&[("a.log", b"text\n", false)]);
        let end = big.len() - 22;
        big[end + 12..end + 16].copy_from_slice(&(100u32 << 20).to_le_bytes());
        let err = list(&written("entries.zip", &big))
            .err()
            .unwrap_or_default();
        assert!(err.contains("entries"), "{err}");
        // An end pointing at no directory.
        let mut moved = zip_of(&[("a.log", b"text\n", false)]);
        let end = moved.len() - 22;
        moved[end + 16..end + 20].copy_from_slice(&3u32.to_le_bytes());
        let err = list(&written("moved.zip", &moved))
            .err()
            .unwrap_or_default();
        assert!(err.contains("no directory"), "{err}");
    }

    #[test]
    fn a_compressed_file_deflated_again_is_not_read() {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"RuntimeError: CUDA error: out of memory\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let gz = e.finish().unwrap_or_else(|e| panic!("{e}"));
        let path = written(
            "twice.zip",
            &zip_of(&[
                ("deflated.log.gz", &gz, true),
                ("stored.log.gz", &gz, false),
            ]),
        );
        let listing = list(&path).unwrap_or_else(|e| panic!("{e}"));
        let err = open_member(&listing.members[0])
            .err()
            .map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("deflated again")),
            "{err:?}"
        );
        // Stored, it is a gzip file as any other, read through `open`.
        assert!(open_member(&listing.members[1]).is_ok());
    }
}

//! Zip archives (a CI system's log download, an issue's attachment): each
//! member is an input of its own, read from the archive without unpacking
//! it. The `zip` crate reads the archive's directory; a member's bytes are
//! read from where its directory entry says they start, stored or through
//! a deflate decoder, under the same expansion limit as compressed files.

use crate::limits::{Capped, Counted, TEXT_EXPANSION};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use zip::CompressionMethod;

/// Most members of one archive taken as inputs; the rest are named in an
/// error.
pub(crate) const MAX_MEMBERS: usize = 10_000;

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

/// Lists the members of the archive at `path` that can be read: files
/// stored or deflated, not encrypted.
pub(crate) fn list(path: &Path) -> Result<Listing, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
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
/// capped at [`TEXT_EXPANSION`] of the bytes consumed, as a compressed
/// file's is.
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
    Ok(Box::new(Capped::new(
        flate2::read::DeflateDecoder::new(counted),
        packed,
        Arc::new(Mutex::new(TEXT_EXPANSION)),
    )))
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
    fn a_file_that_is_no_archive_or_a_cut_one_is_an_error_not_a_panic() {
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
}

//! Little-endian reads at input-derived offsets that never panic.

/// `N` bytes at `offset`, when all of them are inside `data`.
pub fn array<const N: usize>(data: &[u8], offset: usize) -> Option<[u8; N]> {
    let end = offset.checked_add(N)?;
    let slice = data.get(offset..end)?;
    let mut out = [0u8; N];
    out.copy_from_slice(slice);
    Some(out)
}

pub fn u16_at(data: &[u8], offset: usize) -> Option<u16> {
    array::<2>(data, offset).map(u16::from_le_bytes)
}

pub fn u32_at(data: &[u8], offset: usize) -> Option<u32> {
    array::<4>(data, offset).map(u32::from_le_bytes)
}

pub fn i32_at(data: &[u8], offset: usize) -> Option<i32> {
    array::<4>(data, offset).map(i32::from_le_bytes)
}

pub fn u64_at(data: &[u8], offset: usize) -> Option<u64> {
    array::<8>(data, offset).map(u64::from_le_bytes)
}

/// `len` bytes at `offset`, or `None` when they are not all inside `data`.
pub fn slice(data: &[u8], offset: usize, len: usize) -> Option<&[u8]> {
    data.get(offset..offset.checked_add(len)?)
}

/// A NUL-terminated (or NUL-padded) string in a fixed-size field, lossily
/// decoded.
pub fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(field.get(..end).unwrap_or_default()).into_owned()
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len().saturating_mul(2));
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// `u64` to `usize`, saturating (only matters on 32-bit hosts).
pub fn to_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

//! Bytes read as text.

use std::borrow::Cow;

/// `bytes` as text, invalid UTF-8 replaced: [`std::str::from_utf8`]'s
/// word-at-a-time check first, since nearly every head of a log is valid,
/// and the slower replacing decoder only for the rest.
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::lossy;

    #[test]
    fn valid_text_is_borrowed_and_invalid_bytes_are_replaced() {
        assert!(matches!(
            lossy(b"step 1 | loss 2.5"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(lossy(b"a\xffb"), "a\u{fffd}b");
    }
}

//! What a reader that decodes its input a piece at a time has decoded and
//! not handed out yet.

/// Decoded bytes, handed out from the first.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The piece decoded last.
    pub(crate) out: Vec<u8>,
    /// How much of it was handed out.
    at: usize,
}

impl Decoded {
    /// Empties it for the next piece.
    pub(crate) fn clear(&mut self) {
        self.out.clear();
        self.at = 0;
    }

    /// Whether all of the piece was handed out.
    pub(crate) fn is_spent(&self) -> bool {
        self.at >= self.out.len()
    }

    /// Copies into `buf` as much of what is left as fits; how much.
    pub(crate) fn hand_out(&mut self, buf: &mut [u8]) -> usize {
        let left = self.out.get(self.at..).unwrap_or_default();
        let n = left.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), left.get(..n)) {
            to.copy_from_slice(from);
        }
        self.at += n;
        n
    }
}

//! Pickles as hostile input: checked before they are decoded.
//!
//! A pickle is a program for a stack machine. Decoding one here never
//! runs code: only dicts, lists, tuples, sets, strings, bytes, numbers,
//! booleans and `None` are built, and an opcode that would build an object
//! of a class (a global, a reduce) is refused. But a small file can still
//! describe a huge value: the memo lets one object be referenced again and
//! again, and nesting can be deep enough to overflow a recursive walk.
//! [`check`] runs the opcodes once over a stack of sizes instead of values,
//! in time linear in the file, and refuses a pickle whose value would have
//! more than [`Limits::nodes`] parts or be nested deeper than
//! [`Limits::depth`]; [`decode`] then builds the value.
//!
//! Written here rather than taken from `serde-pickle`: that crate refuses
//! the pickles PyTorch's C++ pickler writes (a memoised string used as a
//! dict key and referenced again counts as a recursive structure), and no
//! crate bounds what a pickle may expand to.

use std::collections::HashMap;

/// Values on the stack at most, and memo entries at most.
const MAX_STACK: usize = 1 << 24;
const MAX_MEMO: usize = 1 << 24;

/// Bounds on what a pickle may describe.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Values of the decoded tree at most (every scalar and container
    /// counts one, a memo reference as many as its value has).
    pub nodes: u64,
    /// Nesting depth at most.
    pub depth: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            nodes: 16_000_000,
            depth: 48,
        }
    }
}

/// Why a pickle was not read, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError {
    /// Byte offset of the opcode at fault.
    pub offset: u64,
    pub message: String,
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

/// A decoded value. Tuples, sets and frozen sets are lists.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    /// An integer; one too large for 64 bits is `None`.
    Int(Option<i64>),
    Float(f64),
    /// Shared: a memoised string referenced again is not copied.
    Text(std::rc::Rc<str>),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
}

/// Checks `bytes` against `limits`, then decodes the pickle.
pub fn decode(bytes: &[u8], limits: Limits) -> Result<Value, PickleError> {
    check(bytes, limits)?;
    build(bytes, limits.depth)
}

/// One opcode and its argument.
#[derive(Debug, Clone, Copy)]
enum Arg<'a> {
    None,
    Int(Option<i64>),
    Float(f64),
    Text(&'a [u8]),
    Bytes(&'a [u8]),
    /// A decimal or text argument ending at a newline (protocol 0).
    Line(&'a [u8]),
    Memo(u64),
}

/// Reads the opcodes of a pickle one by one.
struct Ops<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Ops<'a> {
    fn error(at: usize, message: &str) -> PickleError {
        PickleError {
            offset: at as u64,
            message: message.to_owned(),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(Self::error(self.pos, "the pickle ends early (truncated)"));
        };
        let out = self.bytes.get(self.pos..end).unwrap_or_default();
        self.pos = end;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Result<u64, PickleError> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn line(&mut self) -> Result<&'a [u8], PickleError> {
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err(Self::error(self.pos, "the pickle ends early (truncated)"));
        };
        let line = self.take(n + 1)?;
        Ok(line.get(..n).unwrap_or_default())
    }

    fn counted(&mut self, n: usize) -> Result<&'a [u8], PickleError> {
        let at = self.pos;
        let len = self.uint(n)?;
        let len = usize::try_from(len).map_err(|_| Self::error(at, "a length past the file"))?;
        self.take(len)
    }

    /// The next opcode, its offset and its argument.
    fn next(&mut self) -> Result<(usize, u8, Arg<'a>), PickleError> {
        let at = self.pos;
        let op = self.take(1)?.first().copied().unwrap_or_default();
        let signed = |b: &[u8]| {
            // Little-endian two's complement of any length.
            if b.len() > 8 {
                return None;
            }
            let mut v: i64 = if b.last().is_some_and(|&x| x & 0x80 != 0) {
                -1
            } else {
                0
            };
            for &x in b.iter().rev() {
                v = (v << 8) | i64::from(x);
            }
            Some(v)
        };
        let arg = match op {
            0x80 => {
                self.take(1)?;
                Arg::None
            }
            0x95 => {
                self.take(8)?;
                Arg::None
            }
            b'J' => Arg::Int(Some(i64::from(i32::from_le_bytes(
                self.take(4)?.try_into().unwrap_or_default(),
            )))),
            b'K' => Arg::Int(Some(self.uint(1)? as i64)),
            b'M' => Arg::Int(Some(self.uint(2)? as i64)),
            b'G' => Arg::Float(f64::from_be_bytes(
                self.take(8)?.try_into().unwrap_or_default(),
            )),
            0x8a => Arg::Int(signed(self.counted(1)?)),
            0x8b => Arg::Int(signed(self.counted(4)?)),
            b'X' | b'T' => Arg::Text(self.counted(4)?),
            0x8c | b'U' => Arg::Text(self.counted(1)?),
            0x8d => Arg::Text(self.counted(8)?),
            b'B' => Arg::Bytes(self.counted(4)?),
            b'C' => Arg::Bytes(self.counted(1)?),
            0x8e | 0x96 => Arg::Bytes(self.counted(8)?),
            b'I' | b'L' | b'F' | b'V' | b'S' => Arg::Line(self.line()?),
            b'p' | b'g' => {
                let line = self.line()?;
                let id = std::str::from_utf8(line)
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .ok_or_else(|| Self::error(at, "a memo index that is not a number"))?;
                Arg::Memo(id)
            }
            b'q' | b'h' => Arg::Memo(self.uint(1)?),
            b'r' | b'j' => Arg::Memo(self.uint(4)?),
            b'.'
            | b'}'
            | b']'
            | b')'
            | 0x8f
            | b'('
            | b'N'
            | 0x88
            | 0x89
            | b'a'
            | b's'
            | b'e'
            | b'u'
            | 0x90
            | b't'
            | b'l'
            | b'd'
            | 0x91
            | 0x85..=0x87
            | 0x94
            | b'0'
            | b'1'
            | b'2' => Arg::None,
            b'c' | 0x93 | b'R' | b'b' | b'i' | b'o' | 0x81 | 0x92 | b'P' | b'Q' | 0x82 | 0x83
            | 0x84 | 0x97 | 0x98 => {
                return Err(Self::error(
                    at,
                    &format!(
                        "opcode 0x{op:02x} builds an object of a class; only plain data is read"
                    ),
                ))
            }
            _ => return Err(Self::error(at, &format!("unknown opcode 0x{op:02x}"))),
        };
        Ok((at, op, arg))
    }
}

/// What a stack machine does with each kind of opcode; the size check and
/// the decoder differ only in what an item is.
trait Stack {
    type Item: Copy;
    fn scalar(&mut self, op: u8, arg: Arg<'_>) -> Self::Item;
    fn empty(&mut self) -> Self::Item;
    /// A new container of `items` (`dict` pairs them).
    fn new_container(&mut self, items: Vec<Self::Item>, dict: bool) -> Result<Self::Item, String>;
    /// `items` added to `container` (`dict` pairs them).
    fn extend(
        &mut self,
        container: Self::Item,
        items: Vec<Self::Item>,
        dict: bool,
    ) -> Result<Self::Item, String>;
}

/// Runs the opcodes of `bytes` on `machine`; the one value left at `STOP`.
fn run<S: Stack>(bytes: &[u8], machine: &mut S) -> Result<S::Item, PickleError> {
    let mut ops = Ops { bytes, pos: 0 };
    let mut stack: Vec<S::Item> = Vec::new();
    let mut marks: Vec<usize> = Vec::new();
    let mut memo: HashMap<u64, S::Item> = HashMap::new();
    let err = Ops::error;
    loop {
        let (at, op, arg) = ops.next()?;
        let under = |stack: &Vec<S::Item>, n: usize| {
            if stack.len() < n {
                Err(err(at, "stack underflow"))
            } else {
                Ok(stack.len() - n)
            }
        };
        let mut mark = |stack: &Vec<S::Item>| {
            let start = marks.pop().ok_or_else(|| err(at, "no mark"))?;
            if start > stack.len() {
                return Err(err(at, "a mark above the stack"));
            }
            Ok(start)
        };
        let pushed = match op {
            0x80 | 0x95 => None,
            b'.' => {
                return match (stack.pop(), stack.is_empty()) {
                    (Some(v), true) => Ok(v),
                    _ => Err(err(at, "the pickle does not end with one value")),
                }
            }
            b'}' | b']' | b')' | 0x8f => Some(machine.empty()),
            b'(' => {
                marks.push(stack.len());
                None
            }
            b'a' | b's' => {
                let n = if op == b'a' { 1 } else { 2 };
                let from = under(&stack, n + 1)?;
                let items = stack.split_off(from + 1);
                let container = stack.pop().ok_or_else(|| err(at, "stack underflow"))?;
                Some(
                    machine
                        .extend(container, items, op == b's')
                        .map_err(|m| err(at, &m))?,
                )
            }
            b'e' | b'u' | 0x90 => {
                let start = mark(&stack)?;
                let items = stack.split_off(start);
                let container = stack.pop().ok_or_else(|| err(at, "stack underflow"))?;
                Some(
                    machine
                        .extend(container, items, op == b'u')
                        .map_err(|m| err(at, &m))?,
                )
            }
            b't' | b'l' | b'd' | 0x91 => {
                let start = mark(&stack)?;
                let items = stack.split_off(start);
                Some(
                    machine
                        .new_container(items, op == b'd')
                        .map_err(|m| err(at, &m))?,
                )
            }
            0x85..=0x87 => {
                let from = under(&stack, usize::from(op - 0x84))?;
                let items = stack.split_off(from);
                Some(
                    machine
                        .new_container(items, false)
                        .map_err(|m| err(at, &m))?,
                )
            }
            b'p' | b'q' | b'r' | 0x94 => {
                let id = match arg {
                    Arg::Memo(id) => id,
                    _ => memo.len() as u64,
                };
                let top = *stack.last().ok_or_else(|| err(at, "stack underflow"))?;
                if memo.len() >= MAX_MEMO && !memo.contains_key(&id) {
                    return Err(err(at, "too many memo entries"));
                }
                memo.insert(id, top);
                None
            }
            b'g' | b'h' | b'j' => {
                let Arg::Memo(id) = arg else {
                    return Err(err(at, "a bad memo index"));
                };
                Some(
                    *memo
                        .get(&id)
                        .ok_or_else(|| err(at, "a memo reference to nothing"))?,
                )
            }
            b'0' => {
                stack.pop().ok_or_else(|| err(at, "stack underflow"))?;
                None
            }
            b'1' => {
                let start = mark(&stack)?;
                stack.truncate(start);
                None
            }
            b'2' => Some(*stack.last().ok_or_else(|| err(at, "stack underflow"))?),
            _ => Some(machine.scalar(op, arg)),
        };
        if let Some(item) = pushed {
            if stack.len() >= MAX_STACK {
                return Err(err(at, "too many values on the stack"));
            }
            stack.push(item);
        }
    }
}

/// The size of a value: its parts and its nesting.
#[derive(Debug, Clone, Copy)]
struct Size {
    nodes: u64,
    depth: u32,
    /// The container it is, when memoised containers are shared: sizes of
    /// containers live in `Sizes::containers`.
    container: Option<usize>,
}

struct Sizes {
    limits: Limits,
    /// Current sizes of the containers, which grow after they are made
    /// (and after they are put in the memo).
    containers: Vec<(u64, u32)>,
}

impl Sizes {
    fn of(&self, item: Size) -> (u64, u32) {
        item.container
            .and_then(|c| self.containers.get(c).copied())
            .unwrap_or((item.nodes, item.depth))
    }

    fn bound(&self, nodes: u64, depth: u32) -> Result<(), String> {
        if nodes > self.limits.nodes {
            return Err(format!(
                "the value would have more than {} parts",
                self.limits.nodes
            ));
        }
        if depth > self.limits.depth {
            return Err(format!(
                "the value is nested deeper than {} levels",
                self.limits.depth
            ));
        }
        Ok(())
    }

    fn container(&mut self, nodes: u64, depth: u32) -> Result<Size, String> {
        self.bound(nodes, depth)?;
        self.containers.push((nodes, depth));
        Ok(Size {
            nodes,
            depth,
            container: Some(self.containers.len() - 1),
        })
    }
}

impl Stack for Sizes {
    type Item = Size;
    fn scalar(&mut self, _: u8, _: Arg<'_>) -> Size {
        Size {
            nodes: 1,
            depth: 0,
            container: None,
        }
    }
    fn empty(&mut self) -> Size {
        self.containers.push((1, 1));
        Size {
            nodes: 1,
            depth: 1,
            container: Some(self.containers.len() - 1),
        }
    }
    fn new_container(&mut self, items: Vec<Size>, _: bool) -> Result<Size, String> {
        let (mut nodes, mut depth) = (1u64, 1u32);
        for item in items {
            let (n, d) = self.of(item);
            nodes = nodes.saturating_add(n);
            depth = depth.max(d.saturating_add(1));
        }
        self.container(nodes, depth)
    }
    fn extend(&mut self, container: Size, items: Vec<Size>, _: bool) -> Result<Size, String> {
        let (mut nodes, mut depth) = self.of(container);
        for item in items {
            let (n, d) = self.of(item);
            nodes = nodes.saturating_add(n);
            depth = depth.max(d.saturating_add(1));
        }
        self.bound(nodes, depth)?;
        if let Some(slot) = container.container.and_then(|c| self.containers.get_mut(c)) {
            *slot = (nodes, depth);
        }
        Ok(container)
    }
}

/// Checks `bytes` against `limits` without building anything; see the
/// module documentation.
pub fn check(bytes: &[u8], limits: Limits) -> Result<(), PickleError> {
    let mut sizes = Sizes {
        limits,
        containers: Vec::new(),
    };
    run(bytes, &mut sizes).map(|_| ())
}

/// A decoded part: a scalar, or a container of other parts (by index, so
/// that a memoised container filled later is filled for every reference).
enum Node {
    Scalar(Value),
    List(Vec<usize>),
    Dict(Vec<usize>),
}

struct Arena {
    nodes: Vec<Node>,
}

impl Arena {
    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The tree under `at`; deeper than `depth` is a cycle (the size check
    /// bounds true nesting).
    fn value(&self, at: usize, depth: u32) -> Result<Value, String> {
        if depth == 0 {
            return Err("a recursive structure".to_owned());
        }
        Ok(match self.nodes.get(at) {
            Some(Node::Scalar(v)) => v.clone(),
            Some(Node::List(items)) => Value::List(
                items
                    .iter()
                    .map(|&i| self.value(i, depth - 1))
                    .collect::<Result<_, _>>()?,
            ),
            Some(Node::Dict(items)) => {
                let mut pairs = Vec::with_capacity(items.len() / 2);
                for pair in items.chunks(2) {
                    if let [k, v] = pair {
                        pairs.push((self.value(*k, depth - 1)?, self.value(*v, depth - 1)?));
                    }
                }
                Value::Dict(pairs)
            }
            None => Value::None,
        })
    }
}

fn text(bytes: &[u8]) -> Value {
    Value::Text(String::from_utf8_lossy(bytes).into())
}

impl Stack for Arena {
    type Item = usize;
    fn scalar(&mut self, op: u8, arg: Arg<'_>) -> usize {
        let value = match (op, arg) {
            (b'N', _) => Value::None,
            (0x88, _) => Value::Bool(true),
            (0x89, _) => Value::Bool(false),
            (_, Arg::Int(n)) => Value::Int(n),
            (_, Arg::Float(x)) => Value::Float(x),
            (_, Arg::Text(t)) => text(t),
            (_, Arg::Bytes(b)) => Value::Bytes(b.to_vec()),
            (b'I' | b'L', Arg::Line(l)) => {
                let s = String::from_utf8_lossy(l);
                match s.trim().trim_end_matches('L') {
                    "01" => Value::Bool(true),
                    "00" => Value::Bool(false),
                    n => Value::Int(n.parse().ok()),
                }
            }
            (b'F', Arg::Line(l)) => String::from_utf8_lossy(l)
                .trim()
                .parse()
                .map_or(Value::None, Value::Float),
            (_, Arg::Line(l)) => text(
                l.strip_prefix(b"'")
                    .and_then(|l| l.strip_suffix(b"'"))
                    .unwrap_or(l),
            ),
            _ => Value::None,
        };
        self.push(Node::Scalar(value))
    }
    fn empty(&mut self) -> usize {
        // Which kind an empty container is shows when it is filled: items
        // added in pairs make a dict.
        self.push(Node::List(Vec::new()))
    }
    fn new_container(&mut self, items: Vec<usize>, dict: bool) -> Result<usize, String> {
        Ok(self.push(if dict {
            Node::Dict(items)
        } else {
            Node::List(items)
        }))
    }
    fn extend(&mut self, container: usize, items: Vec<usize>, dict: bool) -> Result<usize, String> {
        let node = self
            .nodes
            .get_mut(container)
            .ok_or_else(|| "stack underflow".to_owned())?;
        match node {
            Node::List(have) if dict && have.is_empty() => *node = Node::Dict(items),
            Node::List(have) | Node::Dict(have) => have.extend(items),
            Node::Scalar(_) => return Err("items added to a value that is no container".to_owned()),
        }
        Ok(container)
    }
}

/// Builds the value of a pickle that [`check`] passed.
fn build(bytes: &[u8], depth: u32) -> Result<Value, PickleError> {
    let mut arena = Arena { nodes: Vec::new() };
    let top = run(bytes, &mut arena)?;
    arena
        .value(top, depth.saturating_add(1))
        .map_err(|m| PickleError {
            offset: 0,
            message: m,
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn plain_data_passes() {
        // pickle.dumps({'a': [1, 2, ('x', None)]}, protocol=2)
        let p = b"\x80\x02}q\x00X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02X\x01\x00\x00\x00xq\x03N\x86q\x04es.";
        check(p, Limits::default()).unwrap();
        let v = decode(p, Limits::default()).unwrap();
        assert!(format!("{v:?}").contains("\"x\""));
    }

    #[test]
    fn a_memo_bomb_is_refused_before_decoding() {
        // a = []; b = [a, a]; c = [b, b]; ... 64 levels: 2^64 parts.
        let mut p = b"\x80\x02]q\x00".to_vec();
        for i in 0u8..64 {
            p.extend_from_slice(&[b'(', b'h', i, b'h', i, b'l', b'q', i + 1]);
        }
        p.push(b'.');
        let e = check(&p, Limits::default()).unwrap_err();
        assert!(
            e.message.contains("parts") || e.message.contains("deeper"),
            "{e}"
        );
    }

    #[test]
    fn a_container_filled_after_it_was_memoised_counts_whole() {
        // a = [0] * 1000 put in the memo before its items, then [a] * 1000
        // built from memo references: a million parts.
        let mut p = b"\x80\x02](q\x00".to_vec();
        p.extend(std::iter::repeat_n(b"K\x00".as_slice(), 1000).flatten());
        p.extend_from_slice(b"e0](");
        p.extend(std::iter::repeat_n(b"h\x00".as_slice(), 1000).flatten());
        p.extend_from_slice(b"e.");
        let small = Limits {
            nodes: 100_000,
            depth: 48,
        };
        let e = check(&p, small).unwrap_err();
        assert!(e.message.contains("parts"), "{e}");
        check(&p, Limits::default()).unwrap();
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b']', 10_000));
        p.extend(std::iter::repeat_n(b'a', 9_999));
        p.push(b'.');
        let e = check(&p, Limits::default()).unwrap_err();
        assert!(e.message.contains("deeper"), "{e}");
    }

    #[test]
    fn classes_and_truncation_are_refused_with_their_offset() {
        // pickle of a class instance starts with a global.
        let e = check(b"\x80\x02cos\nsystem\n.", Limits::default()).unwrap_err();
        assert_eq!(e.offset, 2);
        assert!(e.message.contains("class"));
        let e = check(b"\x80\x02X\xff\x00\x00\x00ab", Limits::default()).unwrap_err();
        assert!(e.message.contains("truncated"), "{e}");
    }
}

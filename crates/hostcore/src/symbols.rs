//! Names, files and lines for addresses: DWARF (with inlined frames) via
//! addr2line, else the ELF symbol tables, else nothing (module + offset).

use std::borrow::Cow;
use std::rc::Rc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::modules::{Image, Module};

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// DWARF line and inlining information of one module.
pub struct DebugInfo {
    context: addr2line::Context<Reader>,
}

/// Function symbols sorted by address: (address, size, name).
#[derive(Default)]
pub struct SymbolTable {
    entries: Vec<(u64, u64, String)>,
}

/// One symbolized frame (several for an address with inlined calls).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub inlined: bool,
}

impl SymbolTable {
    fn load(image: &Image<'_>) -> SymbolTable {
        let mut ranked: Vec<(u64, (bool, bool), u64, String)> = image
            .file
            .symbols()
            .chain(image.file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let name = s.name().ok()?;
                // Aliases share an address; like gdb, prefer a public
                // spelling (`pause` over `__libc_pause`), then a strong
                // symbol (`raise` over the weak `gsignal`).
                let rank = (
                    name.starts_with('_') && !name.starts_with("_Z"),
                    s.is_weak(),
                );
                Some((s.address(), rank, s.size(), name.to_string()))
            })
            .filter(|e| !e.3.is_empty())
            .collect();
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        ranked.dedup_by_key(|e| e.0);
        SymbolTable {
            entries: ranked
                .into_iter()
                .map(|(a, _, size, name)| (a, size, name))
                .collect(),
        }
    }

    fn lookup(&self, svma: u64) -> Option<&str> {
        let index = self
            .entries
            .partition_point(|e| e.0 <= svma)
            .checked_sub(1)?;
        let (addr, size, name) = self.entries.get(index)?;
        let inside = if *size > 0 {
            svma < addr.saturating_add(*size)
        } else {
            // Unsized symbols (hand-written assembly): up to the next one.
            self.entries
                .get(index.saturating_add(1))
                .is_none_or(|next| svma < next.0)
        };
        inside.then_some(name.as_str())
    }
}

impl DebugInfo {
    fn load(image: &Image<'_>) -> Option<DebugInfo> {
        image.file.section_by_name(".debug_info")?;
        let endian = if image.file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
            let data = image
                .file
                .section_by_name(id.name())
                .and_then(|s| s.uncompressed_data().ok())
                .unwrap_or(Cow::Borrowed(&[]));
            Ok(gimli::EndianRcSlice::new(Rc::from(&*data), endian))
        };
        let dwarf = gimli::Dwarf::load(load).ok()?;
        let context = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(DebugInfo { context })
    }

    fn locate(&self, svma: u64) -> Vec<Location> {
        let mut out = Vec::new();
        let Ok(mut frames) = self.context.find_frames(svma).skip_all_loads() else {
            return out;
        };
        while let Ok(Some(frame)) = frames.next() {
            let function = frame
                .function
                .as_ref()
                .and_then(|f| f.raw_name().ok())
                .map(|raw| strip_parameters(&demangle_without_return_type(&raw)).to_string());
            let (file, line) = frame
                .location
                .as_ref()
                .map_or((None, None), |l| (l.file.map(str::to_string), l.line));
            out.push(Location {
                function,
                file,
                line,
                inlined: true,
            });
            if out.len() >= 64 {
                break;
            }
        }
        if let Some(last) = out.last_mut() {
            last.inlined = false;
        }
        out
    }
}

/// Demangles C++ (Itanium) and Rust names; others are returned as they are.
pub fn demangle(name: &str) -> String {
    if let Ok(sym) = rustc_demangle::try_demangle(name) {
        return format!("{sym:#}");
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(text) = sym.demangle() {
                return text;
            }
        }
    }
    name.to_string()
}

/// [`demangle`], leaving out the return type of a function template
/// (`void f<int>(int)` → `f<int>(int)`), as gdb names frames that have
/// DWARF.
pub fn demangle_without_return_type(name: &str) -> String {
    if name.starts_with("_Z") && rustc_demangle::try_demangle(name).is_err() {
        let options = cpp_demangle::DemangleOptions::new().no_return_type();
        if let Some(text) = cpp_demangle::Symbol::new(name)
            .ok()
            .and_then(|s| s.demangle_with_options(&options).ok())
        {
            return text;
        }
    }
    demangle(name)
}

/// `ns::f(int) const` → `ns::f`, as gdb names frames that have DWARF.
pub fn strip_parameters(name: &str) -> &str {
    let mut trimmed = name.trim_end();
    for suffix in [" const", " volatile", " &&", " &", " noexcept"] {
        while let Some(rest) = trimmed.strip_suffix(suffix) {
            trimmed = rest.trim_end();
        }
    }
    if !trimmed.ends_with(')') {
        return name;
    }
    let mut depth = 0i32;
    for (at, c) in trimmed.char_indices().rev() {
        match c {
            ')' => depth = depth.saturating_add(1),
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let head = trimmed.get(..at).unwrap_or(name);
                    // `(anonymous namespace)` or a cast operator: keep all.
                    return if head.is_empty() { name } else { head };
                }
            }
            _ => {}
        }
    }
    name
}

/// Locations for `addr` in `module` (innermost inlined first), or an
/// empty list when the module has no verified image or no symbol covers it.
pub fn symbolize(module: &Module<'_>, lookup: u64) -> Vec<Location> {
    let svma = module.svma(lookup);
    let dwarf = module.dwarf.get_or_init(|| {
        module
            .debug_image
            .as_ref()
            .and_then(DebugInfo::load)
            .or_else(|| module.image.as_ref().and_then(DebugInfo::load))
    });
    let mut locations = dwarf.as_ref().map(|d| d.locate(svma)).unwrap_or_default();
    if locations.iter().all(|l| l.function.is_none()) {
        let symbols = module.symbols.get_or_init(|| {
            let mut table = module
                .image
                .as_ref()
                .map(SymbolTable::load)
                .unwrap_or_default();
            if let Some(debug) = &module.debug_image {
                let extra = SymbolTable::load(debug);
                table.entries.extend(extra.entries);
                table.entries.sort_by_key(|e| e.0);
                table.entries.dedup_by_key(|e| e.0);
            }
            table
        });
        if let Some(name) = symbols.lookup(svma) {
            let function = Some(demangle(name));
            match locations.last_mut() {
                Some(last) => last.function = function,
                None => locations.push(Location {
                    function,
                    ..Location::default()
                }),
            }
        }
    }
    locations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_stripped_like_gdb() {
        assert_eq!(strip_parameters("sum_values"), "sum_values");
        assert_eq!(strip_parameters("ns::f(int, char const*)"), "ns::f");
        assert_eq!(strip_parameters("A::g() const"), "A::g");
        assert_eq!(
            strip_parameters("(anonymous namespace)::h(int)"),
            "(anonymous namespace)::h"
        );
        assert_eq!(strip_parameters("(x)"), "(x)");
        assert_eq!(strip_parameters("f(g(int))"), "f");
    }

    #[test]
    fn demangles_cpp_and_rust() {
        assert_eq!(demangle("_ZN2ns1fEi"), "ns::f(int)");
        assert_eq!(demangle("plain"), "plain");
        assert_eq!(
            demangle("_ZN4core9panicking5panic17h0123456789abcdefE"),
            "core::panicking::panic"
        );
    }
}

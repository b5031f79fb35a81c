//! Embedded cubins: function symbols (kernel names) and demangling.

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use crate::lines::LineTable;

/// Names longer than this are not demangled (bounded work on bad input).
const MAX_DEMANGLE: usize = 4096;

/// A function symbol of a relocated cubin.
#[derive(Debug, Clone)]
pub(crate) struct Function {
    pub address: u64,
    pub size: u64,
    pub symbol: String,
    /// Address of the code section holding it.
    pub section_address: u64,
}

/// What is read from one relocated cubin.
#[derive(Debug, Default)]
pub(crate) struct Cubin {
    /// Sorted by address.
    pub functions: Vec<Function>,
    pub lines: Option<LineTable>,
    /// `.debug_str`, for the names of inlined functions.
    pub debug_str: Vec<u8>,
}

impl Cubin {
    /// Parses a cubin; `Err` carries a reason for a warning.
    pub(crate) fn parse(data: &[u8]) -> Result<Self, String> {
        let file = object::read::elf::ElfFile64::<object::Endianness>::parse(data)
            .map_err(|e| e.to_string())?;
        let mut functions = Vec::new();
        for sym in file.symbols() {
            if sym.kind() != SymbolKind::Text {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let section_address = sym
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .map_or(sym.address(), |s| s.address());
            functions.push(Function {
                address: sym.address(),
                size: sym.size(),
                symbol: name.to_string(),
                section_address,
            });
        }
        functions.sort_by_key(|f| (f.address, std::cmp::Reverse(f.size)));
        let section = |name: &str| {
            file.section_by_name(name)
                .and_then(|s| s.data().ok())
                .unwrap_or(&[])
        };
        let debug_line = section(".debug_line");
        let lines = if debug_line.is_empty() {
            None
        } else {
            Some(LineTable::parse(debug_line))
        };
        Ok(Cubin {
            functions,
            lines,
            debug_str: section(".debug_str").to_vec(),
        })
    }

    /// The function starting exactly at `address`.
    pub(crate) fn function_at(&self, address: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.address < address);
        self.functions.get(i).filter(|f| f.address == address)
    }

    /// The function whose extent holds `pc`.
    pub(crate) fn function_containing(&self, pc: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.address <= pc);
        self.functions
            .get(..i)?
            .iter()
            .rev()
            .find(|f| pc.wrapping_sub(f.address) < f.size.max(1))
    }
}

/// Demangles an Itanium C++ name the way cuda-gdb prints it; other names
/// (`extern "C"` kernels) come back unchanged.
///
/// A device function cloned for one kernel is named `$<kernel>$<function>`;
/// cuda-gdb prints it `function(...) [clone kernel(...)]` when both parts
/// are mangled C++ names, and the raw symbol otherwise (an `extern "C"`
/// kernel).
pub(crate) fn demangle(symbol: &str) -> String {
    if let Some((kernel, function)) = symbol
        .strip_prefix('$')
        .and_then(|rest| rest.split_once('$'))
    {
        if kernel.starts_with("_Z") && function.starts_with("_Z") {
            return format!(
                "{} [clone {}]",
                demangle_one(function),
                demangle_one(kernel)
            );
        }
    }
    demangle_one(symbol)
}

fn demangle_one(symbol: &str) -> String {
    if symbol.len() > MAX_DEMANGLE || !symbol.starts_with("_Z") {
        return symbol.to_string();
    }
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| symbol.to_string())
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn names() {
        assert_eq!(
            demangle("_Z13gather_kernelPKiS0_Pii"),
            "gather_kernel(int const*, int const*, int*, int)"
        );
        assert_eq!(
            demangle("$_Z20apply_weights_kernelPKfPKiPfii$_Z13scaled_weightPKfii"),
            "scaled_weight(float const*, int, int) [clone apply_weights_kernel(float const*, int const*, float*, int, int)]"
        );
        assert_eq!(
            demangle("$gather_rows_kernel$_Z8load_rowPKfiii"),
            "$gather_rows_kernel$_Z8load_rowPKfiii"
        );
        assert_eq!(demangle("plain_c_kernel"), "plain_c_kernel");
        assert_eq!(demangle("$"), "$");
        assert_eq!(demangle("_Zbroken"), "_Zbroken");
    }
}

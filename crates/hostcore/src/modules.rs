//! Files mapped into the process: grouping of `NT_FILE` entries, build ids
//! from the headers dumped in the core, and resolution to files on disk
//! whose build id matches (a file with another build id is never used).

use std::cell::OnceCell;
use std::path::{Component, Path, PathBuf};

use coroner_ingest::Mapped;
use coroner_model::MappedModule;
use object::{Object, ObjectSegment};

use crate::bytes::{hex, to_usize, u16_at, u32_at, u64_at};
use crate::memory::Memory;
use crate::notes::FileMapping;
use crate::symbols::{DebugInfo, SymbolTable};
use crate::unwind::Cfi;
use crate::Options;

pub const STATUS_FOUND: &str = "found";
pub const STATUS_MISSING: &str = "missing";
pub const STATUS_MISMATCH: &str = "mismatch";
pub const STATUS_MEMORY: &str = "memory";
pub const STATUS_DATA: &str = "data";

/// Where a module's bytes come from once resolved.
enum Source {
    /// Index into the list of mapped files.
    Disk(usize),
    /// The module's image read from core memory (the vDSO).
    Memory(u64),
}

/// A module before its files are parsed: what the core says, and which
/// file on disk (if any) was verified for it.
pub struct Resolution {
    pub info: MappedModule,
    /// Start of the mapping of file offset 0, when recorded.
    base: Option<u64>,
    pub main: bool,
    source: Option<Source>,
    debug: Option<usize>,
}

/// Files opened for the modules; they outlive every parsed view of them.
#[derive(Default)]
pub struct OpenFiles {
    pub files: Vec<Mapped>,
}

/// Groups `NT_FILE` entries by path and reads each module's build id
/// from the core.
pub fn group(files: &[FileMapping], memory: &Memory<'_>, entry: Option<u64>) -> Vec<Resolution> {
    let mut out: Vec<Resolution> = Vec::new();
    for mapping in files {
        if let Some(existing) = out.iter_mut().find(|r| r.info.path == mapping.path) {
            existing.info.start = existing.info.start.min(mapping.start);
            existing.info.end = existing.info.end.max(mapping.end);
            if mapping.file_offset == 0 && existing.base.is_none() {
                existing.base = Some(mapping.start);
            }
            continue;
        }
        out.push(Resolution {
            info: MappedModule {
                path: mapping.path.clone(),
                start: mapping.start,
                end: mapping.end,
                build_id: None,
                resolved: None,
                status: STATUS_MISSING.to_string(),
            },
            base: (mapping.file_offset == 0).then_some(mapping.start),
            main: false,
            source: None,
            debug: None,
        });
    }
    for r in &mut out {
        r.info.build_id = r
            .base
            .and_then(|base| build_id_in_memory(memory, base))
            .map(|id| hex(&id));
        if let Some(entry) = entry {
            r.main |= (r.info.start..r.info.end).contains(&entry);
        }
    }
    if !out.iter().any(|r| r.main) {
        if let Some(first) = out.first_mut() {
            first.main = true;
        }
    }
    out
}

/// The GNU build id in the ELF image whose header is at `base` in core
/// memory, when the header page and its notes were dumped.
pub fn build_id_in_memory(memory: &Memory<'_>, base: u64) -> Option<Vec<u8>> {
    let header = memory.read(base, 64)?;
    if header.get(..4) != Some(b"\x7fELF".as_slice()) || header.get(4) != Some(&2) {
        return None;
    }
    let phoff = u64_at(header, 32)?;
    let phentsize = u16_at(header, 54)?;
    let phnum = u16_at(header, 56)?;
    for index in 0..u64::from(phnum) {
        let at = base
            .checked_add(phoff)?
            .checked_add(index.checked_mul(u64::from(phentsize))?)?;
        let Some(ph) = memory.read(at, 56) else {
            break;
        };
        if u32_at(ph, 0) != Some(crate::elf::PT_NOTE) {
            continue;
        }
        // The header page maps file offset 0, so the note's file offset
        // is its offset from `base`.
        let (Some(offset), Some(size)) = (u64_at(ph, 8), u64_at(ph, 32)) else {
            continue;
        };
        let Some(notes) = base
            .checked_add(offset)
            .and_then(|addr| memory.read(addr, to_usize(size.min(4096))))
        else {
            continue;
        };
        if let Some(id) = gnu_build_id(notes) {
            return Some(id.to_vec());
        }
    }
    None
}

fn gnu_build_id(segment: &[u8]) -> Option<&[u8]> {
    let mut notes = Vec::new();
    let mut ignored = Vec::new();
    crate::elf::read_notes(segment, &mut notes, &mut ignored);
    notes
        .into_iter()
        .find(|n| n.n_type == 3 && n.name == b"GNU")
        .map(|n| n.desc)
}

/// The last component of a path.
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Build id of a file on disk, and the open file.
fn open_with_id(path: &Path) -> Option<(Mapped, Option<String>)> {
    let mapped = Mapped::open(path).ok()?;
    let id = object::File::parse(&*mapped)
        .ok()?
        .build_id()
        .ok()
        .flatten()
        .map(hex);
    Some((mapped, id))
}

/// Resolves every module to a verified file on disk, in the order
/// `--exe`, each `--sysroot`, each `--debug-dir`, the recorded path.
pub fn resolve(
    modules: &mut [Resolution],
    options: &Options,
    open: &mut OpenFiles,
    warnings: &mut Vec<String>,
) {
    let exe_id = options
        .exe
        .as_deref()
        .and_then(open_with_id)
        .and_then(|(_, id)| id);
    if let Some(exe) = &options.exe {
        if !exe.is_file() {
            warnings.push(format!("executable {} not found", exe.display()));
        }
    }
    for module in modules.iter_mut() {
        if module.info.path.is_empty() || module.info.path.starts_with("/dev/") {
            continue;
        }
        // Where to look, and whether the user pointed there: a path the
        // core records is looked up on this machine only for a module
        // with a build id, and only a match counts, so that the report
        // does not tell which of the paths a core names exist here.
        let mut candidates: Vec<(PathBuf, bool)> = Vec::new();
        if let Some(exe) = &options.exe {
            let same_name = exe
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == file_name(&module.info.path));
            let same_id = exe_id.is_some() && exe_id == module.info.build_id;
            if module.main || same_name || same_id {
                candidates.push((exe.clone(), true));
            }
        }
        let recorded = Path::new(&module.info.path);
        let plain = recorded
            .components()
            .all(|c| !matches!(c, Component::ParentDir | Component::Prefix(_)));
        if plain {
            let relative = module.info.path.trim_start_matches('/');
            for root in &options.sysroots {
                candidates.push((root.join(relative), true));
            }
        }
        for dir in &options.debug_dirs {
            if let Some(id) = &module.info.build_id {
                if let (Some(head), Some(tail)) = (id.get(..2), id.get(2..)) {
                    candidates.push((
                        dir.join(".build-id")
                            .join(head)
                            .join(format!("{tail}.debug")),
                        true,
                    ));
                }
            }
            let name = file_name(&module.info.path);
            if !matches!(name, "" | "." | "..") {
                candidates.push((dir.join(name), true));
            }
        }
        if plain && recorded.is_absolute() && module.info.build_id.is_some() {
            candidates.push((recorded.to_path_buf(), false));
        }

        let mut mismatched: Option<PathBuf> = None;
        for (candidate, pointed) in candidates {
            if pointed && !inside_a_root(&candidate, options) {
                continue;
            }
            let Some((mapped, id)) = open_with_id(&candidate) else {
                continue;
            };
            let verified = match (&module.info.build_id, &id) {
                (Some(want), Some(have)) => want == have,
                // The core lacks the header page: nothing to check against.
                (None, _) => true,
                (Some(_), None) => false,
            };
            if !verified {
                if pointed {
                    mismatched.get_or_insert(candidate);
                }
                continue;
            }
            if module.info.build_id.is_none() {
                warnings.push(format!(
                    "{}: the core holds no build id for it; using {} unverified",
                    module.info.path,
                    candidate.display()
                ));
            }
            module.info.status = STATUS_FOUND.to_string();
            module.info.resolved = Some(candidate.to_string_lossy().into_owned());
            open.files.push(mapped);
            module.source = Some(Source::Disk(open.files.len().saturating_sub(1)));
            break;
        }
        if module.source.is_none() {
            // The module's status says so; frames there show module and
            // offset only.
            if mismatched.is_some() {
                module.info.status = STATUS_MISMATCH.to_string();
            }
            continue;
        }
        // A separate debug file for a stripped binary, by build id.
        let Some(id) = module.info.build_id.clone() else {
            continue;
        };
        let (Some(head), Some(tail)) = (id.get(..2), id.get(2..)) else {
            continue;
        };
        for dir in &options.debug_dirs {
            let path = dir
                .join(".build-id")
                .join(head)
                .join(format!("{tail}.debug"));
            if module.info.resolved.as_deref() == Some(&*path.to_string_lossy()) {
                continue;
            }
            if !inside_a_root(&path, options) {
                continue;
            }
            if let Some((mapped, Some(have))) = open_with_id(&path) {
                if have == id {
                    open.files.push(mapped);
                    module.debug = Some(open.files.len().saturating_sub(1));
                    break;
                }
            }
        }
    }
}

/// Whether `candidate` is the `--exe` file or, links resolved, lies inside
/// one of the `--sysroot` or `--debug-dir` folders (a recorded path with
/// `..` or a link inside the folder must not lead out of it).
fn inside_a_root(candidate: &Path, options: &Options) -> bool {
    if options.exe.as_deref() == Some(candidate) {
        return true;
    }
    let Ok(real) = candidate.canonicalize() else {
        return false;
    };
    options
        .sysroots
        .iter()
        .chain(&options.debug_dirs)
        .filter_map(|root| root.canonicalize().ok())
        .any(|root| real.starts_with(root))
}

/// Adds the vDSO, whose image is always in the core.
pub fn add_vdso(modules: &mut Vec<Resolution>, memory: &Memory<'_>, vdso: Option<u64>) {
    let Some(base) = vdso else {
        return;
    };
    let Some(image) = memory.read_rest(base) else {
        return;
    };
    modules.push(Resolution {
        info: MappedModule {
            path: "[vdso]".to_string(),
            start: base,
            end: base.saturating_add(image.len() as u64),
            build_id: build_id_in_memory(memory, base).map(|id| hex(&id)),
            resolved: None,
            status: STATUS_MEMORY.to_string(),
        },
        base: Some(base),
        main: false,
        source: Some(Source::Memory(base)),
        debug: None,
    });
}

/// A parsed object file (on disk or in core memory).
pub struct Image<'d> {
    pub file: object::File<'d>,
}

impl<'d> Image<'d> {
    fn parse(data: &'d [u8]) -> Option<Image<'d>> {
        Some(Image {
            file: object::File::parse(data).ok()?,
        })
    }

    /// Lowest `p_vaddr` of a loadable segment, page aligned.
    fn first_vaddr(&self) -> u64 {
        self.file.segments().map(|s| s.address()).min().unwrap_or(0) & !0xfff
    }

    /// `len` bytes of the image at `svma`.
    pub fn bytes_at(&self, svma: u64, len: u64) -> Option<&'d [u8]> {
        self.file
            .segments()
            .find_map(|s| s.data_range(svma, len).ok().flatten())
    }
}

/// A module ready for unwinding and symbolizing.
pub struct Module<'d> {
    pub info: MappedModule,
    /// Runtime address minus the file's virtual address.
    pub bias: u64,
    pub image: Option<Image<'d>>,
    pub debug_image: Option<Image<'d>>,
    pub cfi: OnceCell<Option<Cfi<'d>>>,
    pub symbols: OnceCell<SymbolTable>,
    pub dwarf: OnceCell<Option<DebugInfo>>,
}

impl<'d> Module<'d> {
    pub fn contains(&self, addr: u64) -> bool {
        (self.info.start..self.info.end).contains(&addr)
    }

    pub fn svma(&self, addr: u64) -> u64 {
        addr.wrapping_sub(self.bias)
    }

    /// Code or data bytes of the verified image at runtime `addr`.
    pub fn bytes_at(&self, addr: u64, len: u64) -> Option<&'d [u8]> {
        self.image.as_ref()?.bytes_at(self.svma(addr), len)
    }
}

/// All modules, sorted by start address.
pub struct Modules<'d> {
    pub list: Vec<Module<'d>>,
}

impl<'d> Modules<'d> {
    pub fn build(
        resolutions: Vec<Resolution>,
        open: &'d OpenFiles,
        core_memory: &Memory<'d>,
    ) -> Modules<'d> {
        let mut list: Vec<Module<'d>> = resolutions
            .into_iter()
            .map(|r| {
                let data: Option<&'d [u8]> = match r.source {
                    Some(Source::Disk(i)) => open.files.get(i).map(|m| &**m),
                    Some(Source::Memory(base)) => core_memory.read_rest(base),
                    None => None,
                };
                let image = data.and_then(Image::parse);
                let debug_image = r
                    .debug
                    .and_then(|i| open.files.get(i))
                    .and_then(|m| Image::parse(m));
                let base = r.base.unwrap_or(r.info.start);
                let bias = image
                    .as_ref()
                    .map_or(base, |img| base.wrapping_sub(img.first_vaddr()));
                Module {
                    info: r.info,
                    bias,
                    image,
                    debug_image,
                    cfi: OnceCell::new(),
                    symbols: OnceCell::new(),
                    dwarf: OnceCell::new(),
                }
            })
            .collect();
        list.sort_by_key(|m| m.info.start);
        Modules { list }
    }

    pub fn find(&self, addr: u64) -> Option<&Module<'d>> {
        let index = self
            .list
            .partition_point(|m| m.info.start <= addr)
            .checked_sub(1)?;
        // Mappings of different files can interleave; look back a little.
        self.list
            .get(index.saturating_sub(8)..=index)?
            .iter()
            .rev()
            .find(|m| m.contains(addr))
    }
}

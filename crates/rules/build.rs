//! Embeds every `rules/**/*.toml` file of the repository into the crate, so
//! the binary carries its built-in rules and works from any directory.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    // `rules` is a link to the repository's rules folder, so that a
    // packaged crate carries the files.
    let root = manifest.join("rules");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    files.sort();
    let mut code = String::from("/// Built-in rule files: (path relative to the repository, contents).\npub static BUILTIN_RULES: &[(&str, &str)] = &[\n");
    // The rule pack's version: a digest of every file's path and contents.
    let mut digest = Sha256::new();
    for file in &files {
        let rel = file.strip_prefix(&manifest).unwrap_or(file);
        digest.update(rel.to_string_lossy().as_bytes());
        digest.update([0]);
        digest.update(fs::read(file).unwrap_or_default());
        digest.update([0]);
    }
    let digest: String = digest.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // The pack's named regexes are not a rule: they go to a constant of
    // their own.
    let table = root.join("patterns.toml");
    let mut patterns = String::from("(\"rules/patterns.toml\", \"\")");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let rel = file.strip_prefix(&manifest).unwrap_or(file);
        if *file == table {
            patterns = format!(
                "({:?}, include_str!({:?}))",
                rel.to_string_lossy(),
                file.canonicalize()
                    .unwrap_or_else(|_| file.clone())
                    .to_string_lossy()
            );
            continue;
        }
        let _ = writeln!(
            code,
            "    ({:?}, include_str!({:?})),",
            rel.to_string_lossy(),
            file.canonicalize()
                .unwrap_or_else(|_| file.clone())
                .to_string_lossy()
        );
    }
    code.push_str("];\n");
    let _ = writeln!(
        code,
        "/// The built-in pack's named regexes: (path, contents).\npub static BUILTIN_PATTERNS: (&str, &str) = {patterns};"
    );
    let _ = writeln!(
        code,
        "/// The built-in rule pack's version: a digest of its files.\npub const BUILTIN_DIGEST: &str = {digest:?};"
    );
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default()).join("builtin_rules.rs");
    if let Err(e) = fs::write(&out, code) {
        panic!("cannot write {}: {e}", out.display());
    }
}

//! Lays out the functions a request runs first in lingo's binary, hottest first
//! (`link/hot-functions.txt`, written by `benches/hot.sh`).
//!
//! Left where the compiler puts them, a request's ~500 functions lie scattered over an
//! 8 MiB text section: more instruction-cache and TLB misses than its instructions need
//! (README, Benchmarks, stop 45). The order is a linker option, so it is asked for only
//! where the linker is known to take it: rust-lld, which links `x86_64-unknown-linux-gnu`
//! by default from Rust 1.90, when no other linker is configured. Elsewhere (GNU ld, which
//! would refuse the option) the binary is linked as before. Only the `lingo` binary is
//! given the order; names the list has and the binary lacks are skipped by the linker.

use std::env;
use std::path::Path;
use std::process::Command;

const LIST: &str = "link/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={LIST}");
    if !links_with_rust_lld() {
        return;
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join(LIST);
    // `-Wl,` splits its argument at commas.
    if !list.is_file() || list.to_string_lossy().contains(',') {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// Whether the binary is linked by the toolchain's own rust-lld: the default for
/// `x86_64-unknown-linux-gnu` from Rust 1.90, unless a linker, its flavour or its features
/// are set (in Cargo's configuration or the flags).
fn links_with_rust_lld() -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    target == "x86_64-unknown-linux-gnu"
        && env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("link")
        && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the compiler cargo builds with (`rustc 1.95.0 (...)`: 95).
fn rustc_minor() -> Option<u32> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(out.stdout).ok()?;
    version
        .split_whitespace()
        .nth(1)?
        .split('.')
        .nth(1)?
        .parse()
        .ok()
}

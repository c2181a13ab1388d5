//! Lays out the functions a request runs first in lingo's binary, hottest first
//! (`link/hot-functions.txt`, written by `benches/hot.sh`).
//!
//! Left where the compiler puts them, the ~500 functions the benchmarks' requests run lie
//! scattered over a 6.6 MiB text section, among code no request runs: more instruction
//! cache misses than their instructions need (`benches/ab.sh --instructions` counts them).
//! The order is a linker option that rust-lld takes and GNU ld refuses, so it is asked for
//! only after a probe: a small program linked with it by the same compiler, target, flags and
//! linker as lingo's. Where that link fails, lingo is linked as before. Only the `lingo`
//! binary is given the order; a name the list has and a build lacks is skipped.
//!
//! A symbol's name carries a hash of its crate, which includes the compiler's version: on
//! another toolchain than the one the list names in its first line, only its C functions
//! (the allocator's) still match (`benches/hot.sh --check` counts them).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LIST: &str = "link/hot-functions.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={LIST}");
    let target = env::var("TARGET").unwrap_or_default();
    let triple = target.to_uppercase().replace('-', "_");
    for var in [
        "RUSTFLAGS".to_string(),
        "CARGO_BUILD_RUSTFLAGS".to_string(),
        "CARGO_ENCODED_RUSTFLAGS".to_string(),
        "RUSTC_LINKER".to_string(),
        format!("CARGO_TARGET_{triple}_RUSTFLAGS"),
        format!("CARGO_TARGET_{triple}_LINKER"),
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").expect("set by cargo")).join(LIST);
    // `-Wl,` splits its argument at commas; a path that is not UTF-8 cannot be passed on.
    let Some(list) = list.to_str().filter(|l| !l.contains(',')) else {
        return;
    };
    let args = [
        format!("-Wl,--symbol-ordering-file={list}"),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    if !Path::new(list).is_file() || !links(&target, &args) {
        return;
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=lingo={arg}");
    }
}

/// Whether a program links with `args` added, built as lingo is: the same compiler,
/// target, flags (`CARGO_ENCODED_RUSTFLAGS`) and linker (`RUSTC_LINKER`).
fn links(target: &str, args: &[String]) -> bool {
    let out = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let source = out.join("probe.rs");
    if std::fs::write(&source, "fn main() {}\n").is_err() {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let mut probe = Command::new(rustc);
    probe
        .args(["--crate-type", "bin", "--crate-name", "probe"])
        .args(["--target", target, "-o"])
        .arg(out.join("probe"))
        .arg(&source);
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    probe.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    if let Ok(linker) = env::var("RUSTC_LINKER") {
        probe.arg(format!("-Clinker={linker}"));
    }
    for arg in args {
        probe.arg(format!("-Clink-arg={arg}"));
    }
    probe
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
